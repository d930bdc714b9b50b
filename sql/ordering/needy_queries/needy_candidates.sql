-- Queries of the partition with their frequency, the average score of their current top K (0: none) and their share
-- of noise under perturb_seed (0 without).
SELECT l.query, exact_sum(l.frequency) AS frequency, coalesce(any_value(r.avg_score), 0) AS avg_score,
       perturbation(l.query) AS noise
FROM query_log l
LEFT JOIN v_query_topk_score r ON r.query = l.query AND r.cycle = $cycle
WHERE l.partition = $partition
GROUP BY l.query;
