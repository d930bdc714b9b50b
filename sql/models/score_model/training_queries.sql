-- The queries S' trains on: at most $queries distinct queries of cycle $cycle's query-log partition, a sample
-- that is the same for the same partition (ordered by hash).
SELECT DISTINCT l.query
FROM query_log l JOIN cycles c ON c.interval_start = l.partition
WHERE c.cycle = $cycle
ORDER BY md5(l.query)
LIMIT $queries;
