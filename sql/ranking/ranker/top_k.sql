-- Cycle $cycle's reference results: the top $top_k pages of each query (s_queries, terms in s_query_terms) by
-- score (see weights.sql), ties by URL. Candidates of a query are, for each of its terms, the $depth pages with
-- the highest weight + prior for that term; every candidate is then scored over all the query's terms.
-- inputs: s_queries, s_query_terms
DELETE FROM query_results WHERE cycle = $cycle;
INSERT INTO query_results (cycle, query, rank, url, score, source)
WITH best AS (
    SELECT tid, doc FROM r_weights
    QUALIFY row_number() OVER (PARTITION BY tid ORDER BY weight + prior DESC, doc) <= $depth
), candidates AS (
    SELECT DISTINCT q.qid, b.doc FROM s_query_terms q JOIN best b ON b.tid = q.tid
), scored AS (
    SELECT c.qid, c.doc, exact_sum(w.weight) + any_value(w.prior) AS score
    FROM candidates c
    JOIN s_query_terms q ON q.qid = c.qid
    JOIN r_weights w ON w.key = q.tid::BIGINT << 32 | c.doc
    GROUP BY c.qid, c.doc
), cutoff AS (
    -- each query's K-th best score: ordering only what reaches it is several times faster
    SELECT qid, list_min(max(score, $top_k)) AS score FROM scored GROUP BY qid
)
SELECT $cycle, q.query, row_number() OVER (PARTITION BY s.qid ORDER BY s.score DESC, d.url) AS rank, d.url, s.score,
       'reference'
FROM scored s
JOIN cutoff c ON c.qid = s.qid AND s.score >= c.score
JOIN s_queries q ON q.qid = s.qid
JOIN posting_docs d ON d.doc = s.doc
QUALIFY rank <= $top_k;
