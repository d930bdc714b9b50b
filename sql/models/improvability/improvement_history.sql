-- The improvability curve's data: every improvement recorded up to cycle $cycle, with the query's average top-K
-- score before it.
SELECT prior_avg_score AS x, improvement AS y
FROM query_improvement
WHERE cycle <= $cycle
ORDER BY cycle, query;
