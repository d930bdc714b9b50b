-- Replace partition $partition of the query log with the rows of s_query_log.
-- inputs: s_query_log
DELETE FROM query_log WHERE partition = $partition;
INSERT INTO query_log (partition, query, frequency, time, shown_url, rank, clicked)
SELECT $partition, query, frequency, time, shown_url, rank, clicked FROM s_query_log;
