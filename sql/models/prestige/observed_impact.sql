-- What the prestige regression learns from: every crawled, indexed page of cycle $cycle with its scaled PageRank
-- (1 = an average page), its in-links and its observed impact. Impact comes from the partition's impressions
-- (s_shown: url, impact) when it has any, else from the reference ranker: the sum of f(q) over the partition's
-- queries that show the page in their top K.
-- inputs: s_shown
WITH freq AS (
    SELECT query, exact_sum(frequency) AS frequency FROM query_log WHERE partition = $partition GROUP BY query
), ranked AS (
    SELECT r.url, exact_sum(f.frequency) AS impact
    FROM query_results r JOIN freq f USING (query)
    WHERE r.cycle = $cycle
    GROUP BY r.url
)
SELECT d.url, f.pagerank * (SELECT count(*) FROM frontier) AS pagerank, f.in_links,
       coalesce(CASE WHEN $from_log THEN s.impact ELSE r.impact END, 0) AS impact
FROM posting_docs d
JOIN frontier f ON f.url = d.url
LEFT JOIN ranked r ON r.url = d.url
LEFT JOIN s_shown s ON s.url = d.url
ORDER BY d.url;
