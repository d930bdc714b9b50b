-- Index membership for index run $cycle: pages no longer indexable (or no longer stored: gone, moved) leave the index
-- with their postings, indexable pages not indexed yet join it, and pages whose stored copy this cycle replaced (a
-- check found them changed) are indexed anew. Indexable: not noindex, not a duplicate, with a title or main text.
CREATE OR REPLACE TEMP TABLE r_indexable AS
SELECT url FROM pages
WHERE duplicate_of IS NULL AND NOT coalesce(noindex, false) AND (title IS NOT NULL OR text IS NOT NULL);
CREATE OR REPLACE TEMP TABLE r_gone AS
SELECT d.doc FROM posting_docs d ANTI JOIN r_indexable i ON i.url = d.url;
-- Terms whose document frequency this run changes (write_postings adds to it).
CREATE OR REPLACE TEMP TABLE r_touched AS
SELECT DISTINCT p.term FROM postings p SEMI JOIN r_gone g ON g.doc = p.doc;
DELETE FROM postings WHERE doc IN (SELECT doc FROM r_gone);
DELETE FROM posting_lengths WHERE doc IN (SELECT doc FROM r_gone);
DELETE FROM posting_docs WHERE doc IN (SELECT doc FROM r_gone);
UPDATE posting_docs SET cycle = $cycle, anchor_cycle = $cycle
WHERE cycle < $cycle AND url IN (SELECT url FROM pages WHERE cycle = $cycle);
INSERT INTO posting_docs (doc, url, cycle, anchor_cycle)
SELECT (SELECT coalesce(max(doc), 0) FROM posting_docs) + row_number() OVER (ORDER BY i.url), i.url, $cycle, $cycle
FROM r_indexable i ANTI JOIN posting_docs d ON d.url = i.url;
-- Pages whose fields this run writes, numbered 1.. for processing in chunks. The anchor field of each: pages new
-- to the index, indexed anew or rewritten by an earlier run of this cycle, and pages with in-links newer than their
-- anchor field. The title, text and url fields (content) of pages (first) indexed by this cycle.
CREATE OR REPLACE TEMP TABLE r_refresh AS
SELECT d.doc, d.url, d.cycle = $cycle AS content, row_number() OVER (ORDER BY d.doc) AS n
FROM posting_docs d
WHERE d.anchor_cycle = $cycle
   OR d.doc IN (SELECT d2.doc FROM posting_docs d2 JOIN links l ON l.dst = d2.url WHERE l.cycle > d2.anchor_cycle);
DROP TABLE r_indexable;
DROP TABLE r_gone;
