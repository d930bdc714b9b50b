-- Queries of the partition with their frequency and the average score of their current top K (0: none).
SELECT l.query, sum(l.frequency) AS frequency, coalesce(any_value(r.avg_score), 0) AS avg_score
FROM query_log l
LEFT JOIN (SELECT query, round(avg(score), 9) AS avg_score FROM query_results WHERE cycle = $cycle GROUP BY query) r
       ON r.query = l.query
WHERE l.partition = $partition
GROUP BY l.query;
