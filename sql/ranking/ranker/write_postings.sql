-- Replace the postings and lengths of the (page, field) pairs in s_rewrite with those in s_postings (the tokenized
-- chunks of index_pages).
CREATE OR REPLACE TEMP TABLE r_rewrite AS
SELECT d.doc, r.field FROM s_rewrite r JOIN posting_docs d ON d.url = r.url;
INSERT INTO r_touched
SELECT p.term FROM postings p SEMI JOIN r_rewrite r ON r.doc = p.doc AND r.field = p.field
UNION
SELECT term FROM s_postings;
DELETE FROM postings p USING r_rewrite r WHERE p.doc = r.doc AND p.field = r.field;
DELETE FROM posting_lengths l USING r_rewrite r WHERE l.doc = r.doc AND l.field = r.field;
INSERT INTO postings (term, doc, field, tf)
SELECT s.term, d.doc, s.field, s.tf FROM s_postings s JOIN posting_docs d ON d.url = s.url;
INSERT INTO posting_lengths (doc, field, length)
SELECT d.doc, s.field, sum(s.tf) FROM s_postings s JOIN posting_docs d ON d.url = s.url GROUP BY d.doc, s.field;
UPDATE posting_docs SET anchor_cycle = $cycle WHERE url IN (SELECT url FROM s_rewrite WHERE field = 'anchor');
DROP TABLE r_rewrite;
DROP TABLE s_rewrite;
DROP TABLE s_postings;
DROP TABLE r_content;
DROP TABLE r_anchor_texts;
