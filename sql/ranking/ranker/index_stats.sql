-- Refresh the document frequency of every term whose postings this run changed, and the per-field statistics.
DELETE FROM posting_terms WHERE term IN (SELECT term FROM r_touched);
INSERT INTO posting_terms (term, df)
SELECT p.term, count(DISTINCT p.doc) FROM postings p SEMI JOIN r_touched t ON t.term = p.term GROUP BY p.term;
DELETE FROM posting_fields;
INSERT INTO posting_fields (field, docs, avg_length)
SELECT field, count(*), sum(length) / (SELECT count(*) FROM posting_docs) FROM posting_lengths GROUP BY field;
DROP TABLE r_touched;
DROP TABLE r_refresh;
