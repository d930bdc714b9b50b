-- Crawl page: per-host politeness delays, robots.txt state and fetch errors (all cycles), slowest first.
SELECT host, robots, crawl_delay, delay, last_response_ms, consecutive_errors,
       to_timestamp(backoff_until) AS backoff_until, fetches, errors, avg_ms, p95_ms
FROM v_host_health
ORDER BY avg_ms DESC NULLS LAST, host;
