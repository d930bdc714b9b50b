-- An index built with another analyzer than $analyzer holds terms today's queries cannot match: empty it, so that
-- this run's sync_docs indexes every indexable page anew, and remember the analyzer.
CREATE OR REPLACE TEMP TABLE r_other_analyzer AS
SELECT EXISTS (SELECT 1 FROM posting_analyzer WHERE analyzer <> $analyzer) AS other;
DELETE FROM postings WHERE (SELECT other FROM r_other_analyzer);
DELETE FROM posting_lengths WHERE (SELECT other FROM r_other_analyzer);
DELETE FROM posting_terms WHERE (SELECT other FROM r_other_analyzer);
DELETE FROM posting_fields WHERE (SELECT other FROM r_other_analyzer);
DELETE FROM posting_docs WHERE (SELECT other FROM r_other_analyzer);
DELETE FROM posting_analyzer;
INSERT INTO posting_analyzer VALUES ($analyzer);
DROP TABLE r_other_analyzer;
