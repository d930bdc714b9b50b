-- Measure, for every query ranked in cycle $cycle, its improvement by this cycle's fetches.
DELETE FROM query_improvement WHERE cycle = $cycle;
INSERT INTO query_improvement (cycle, query, prior_avg_score, improvement)
SELECT $cycle, r.query,
       round(coalesce(any_value(b.avg_score), 0), 9) AS prior_avg_score,
       count(p.url) AS improvement
FROM query_results r
LEFT JOIN pages p ON p.url = r.url AND p.cycle = $cycle
LEFT JOIN (SELECT query, avg(score) AS avg_score FROM query_results WHERE cycle = $cycle - 1 GROUP BY query) b
       ON b.query = r.query
WHERE r.cycle = $cycle
GROUP BY r.query;
