-- Measure, for every query ranked in cycle $cycle, its improvement by this cycle's fetches.
DELETE FROM query_improvement WHERE cycle = $cycle;
INSERT INTO query_improvement (cycle, query, prior_avg_score, improvement)
SELECT $cycle, r.query,
       coalesce(any_value(b.avg_score), 0) AS prior_avg_score,
       count(p.url) AS improvement
FROM query_results r
LEFT JOIN pages p ON p.url = r.url AND p.cycle = $cycle
LEFT JOIN v_query_topk_score b ON b.query = r.query AND b.cycle = $cycle - 1
WHERE r.cycle = $cycle
GROUP BY r.query;
