-- Inherited relevance of the candidate pairs (s_candidates: qid, seq; s_queries: qid, query): the reference
-- ranker's score S of each crawled, indexed page linking to the page, for the query (r_weights, ranking/ranker/weights.sql,
-- staged for the same qids; 0 where the linking page holds no query term). Max and mean over those pages, and how
-- many there are. The linking pages are listed once per page, not per pair: a page linked from every crawled page
-- would otherwise make queries x linking pages rows.
-- inputs: s_candidates, s_query_terms
WITH linkers AS (
    SELECT DISTINCT f.discovery_seq AS seq, d.doc
    FROM (SELECT DISTINCT seq FROM s_candidates) c
    JOIN frontier f ON f.discovery_seq = c.seq
    JOIN links l ON l.dst = f.url
    JOIN posting_docs d ON d.url = l.src
    WHERE l.src <> l.dst
), counts AS (
    SELECT seq, count(*) AS linkers FROM linkers GROUP BY seq
), needed AS (
    -- the (query, linking page) pairs the candidates need: scoring every page that holds a query term instead would
    -- grow with queries x pages
    SELECT DISTINCT c.qid, k.doc FROM s_candidates c JOIN linkers k ON k.seq = c.seq
), doc_scores AS (
    SELECT n.qid, n.doc, exact_sum(w.weight) + any_value(w.prior) AS score
    FROM needed n
    JOIN s_query_terms t ON t.qid = n.qid
    JOIN r_weights w ON w.key = t.tid::BIGINT << 32 | n.doc
    GROUP BY n.qid, n.doc
), scored AS (
    SELECT c.qid, c.seq, max(s.score) AS top, exact_sum(s.score) AS total
    FROM s_candidates c
    JOIN linkers k ON k.seq = c.seq
    JOIN doc_scores s ON s.qid = c.qid AND s.doc = k.doc
    GROUP BY c.qid, c.seq
)
SELECT c.qid, c.seq, round(coalesce(s.top, 0), 9) AS inherited_max,
       round(coalesce(s.total, 0) / n.linkers, 9) AS inherited_mean, n.linkers AS crawled_linkers
FROM s_candidates c
JOIN counts n ON n.seq = c.seq
LEFT JOIN scored s ON s.qid = c.qid AND s.seq = c.seq
ORDER BY c.qid, c.seq;
