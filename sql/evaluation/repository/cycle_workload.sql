-- The queries of cycle $cycle's query-log partition with their frequencies.
SELECT l.query, sum(l.frequency) AS frequency
FROM query_log l JOIN cycles c ON c.interval_start = l.partition
WHERE c.cycle = $cycle
GROUP BY l.query
ORDER BY l.query;
