-- The scored candidates of each query (s_queries, terms in s_query_terms) for its top K (top_cut.sql), by score
-- (see weights.sql): for each of its terms, the $depth pages with the highest weight + prior for that term, each
-- scored over all the query's terms, into r_scored (qid, doc, score).
-- Each step is a statement of its own, its result a temp table: as one statement the window, the distinct, the
-- scoring aggregate and the cut held their hash tables at once (926 MiB for 3,000 queries over 1,668 pages, where
-- the largest step alone takes 125 MiB), and under a low memory_limit the query stopped instead of spilling.
-- inputs: s_query_terms
CREATE OR REPLACE TEMP TABLE r_best AS
SELECT tid, doc FROM r_weights
QUALIFY row_number() OVER (PARTITION BY tid ORDER BY weight + prior DESC, doc) <= $depth;
CREATE OR REPLACE TEMP TABLE r_candidates AS
SELECT DISTINCT q.qid, b.doc FROM s_query_terms q JOIN r_best b ON b.tid = q.tid;
CREATE OR REPLACE TEMP TABLE r_scored AS
SELECT c.qid, c.doc, exact_sum(w.weight) + any_value(w.prior) AS score
FROM r_candidates c
JOIN s_query_terms q ON q.qid = c.qid
JOIN r_weights w ON w.key = q.tid::BIGINT << 32 | c.doc
GROUP BY c.qid, c.doc;
DROP TABLE r_best;
DROP TABLE r_candidates;
