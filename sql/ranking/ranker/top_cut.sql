-- The top $top_k of each query's scored pages (r_scored: qid, doc, score; top_k.sql or merge_top_k.sql), ties by URL.
-- inputs: s_queries
WITH cutoff AS (
    -- each query's K-th best score: ordering only what reaches it is several times faster
    SELECT qid, list_min(max(score, $top_k)) AS score FROM r_scored GROUP BY qid
)
SELECT q.query, row_number() OVER (PARTITION BY s.qid ORDER BY s.score DESC, d.url) AS rank, d.url, s.score
FROM r_scored s
JOIN cutoff c ON c.qid = s.qid AND s.score >= c.score
JOIN s_queries q ON q.qid = s.qid
JOIN posting_docs d ON d.doc = s.doc
QUALIFY rank <= $top_k
