-- What a page must score to enter each query's top K in cycle $cycle: the K-th best S of its crawled results, 0
-- while it has fewer than $top_k (then any page holding one of its terms does); and how full its top K is.
SELECT query, CASE WHEN count(*) >= $top_k THEN min(score) ELSE 0 END AS bar,
       count(*) / $top_k AS result_share
FROM query_results
WHERE cycle = $cycle
GROUP BY query;
