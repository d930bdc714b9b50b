-- The distinct queries of cycle $cycle's query-log partition.
SELECT DISTINCT l.query
FROM query_log l JOIN cycles c ON c.interval_start = l.partition
WHERE c.cycle = $cycle;
