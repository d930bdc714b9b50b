-- Measure, for every query ranked in cycle $cycle, its improvement by this cycle's fetches: how many of its top K
-- are pages fetched in this cycle, next to the average score of its top K before (v_query_topk_score's figure,
-- computed here for the one cycle it needs).
DELETE FROM query_improvement WHERE cycle = $cycle;
INSERT INTO query_improvement (cycle, query, prior_avg_score, improvement)
WITH before AS (
    SELECT query, round(exact_avg(score), 9) AS avg_score FROM query_results WHERE cycle = score_cycle_of($cycle) GROUP BY query
)
SELECT $cycle, r.query,
       coalesce(any_value(b.avg_score), 0) AS prior_avg_score,
       count(p.url) AS improvement
FROM query_results r
LEFT JOIN pages p ON p.url = r.url AND p.cycle = $cycle
LEFT JOIN before b ON b.query = r.query
WHERE r.cycle = $cycle
GROUP BY r.query;
