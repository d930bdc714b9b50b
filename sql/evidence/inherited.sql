-- Inherited relevance of the candidate pairs (s_candidates: qid, seq; s_queries: qid, query): the reference
-- ranker's score S of each crawled, indexed page linking to the page, for the query (r_weights, ranker/weights.sql,
-- staged for the same qids; 0 where the linking page holds no query term). Max and mean over those pages, and how
-- many there are.
WITH linkers AS (
    SELECT DISTINCT c.qid, c.seq, d.doc
    FROM s_candidates c
    JOIN frontier f ON f.discovery_seq = c.seq
    JOIN links l ON l.dst = f.url
    JOIN posting_docs d ON d.url = l.src
    WHERE l.src <> l.dst
), scores AS (
    SELECT k.qid, k.seq, k.doc, coalesce(sum(w.weight) + any_value(w.prior), 0) AS score
    FROM linkers k
    LEFT JOIN s_query_terms t ON t.qid = k.qid
    LEFT JOIN r_weights w ON w.key = t.tid::BIGINT << 32 | k.doc
    GROUP BY k.qid, k.seq, k.doc
)
SELECT qid, seq, round(max(score), 9) AS inherited_max, round(avg(score), 9) AS inherited_mean,
       count(*) AS crawled_linkers
FROM scores
GROUP BY qid, seq
ORDER BY qid, seq;
