-- Merge the shards' fetch output of cycle $cycle (staged as tables s_fetch_log, s_requests, s_hosts).
INSERT INTO fetch_log
SELECT $cycle, shard, url, host, final_url, status, redirects, bytes, content_type, started_at, finished_at,
       elapsed_ms, error_class, truncated, outcome
FROM s_fetch_log;
INSERT INTO fetch_requests SELECT $cycle, host, url, started_at, finished_at FROM s_requests;
INSERT OR REPLACE INTO hosts
SELECT host, robots_status, robots_fetched_at, robots_txt, crawl_delay, sitemaps, delay, last_response_ms,
       errors, backoff_until, $cycle
FROM s_hosts;
-- URL states: transient failures retry after an exponential number of cycles, until retry_limit.
UPDATE frontier f SET
    attempts = f.attempts + CASE WHEN l.outcome = 'retry_pending' THEN 1 ELSE 0 END,
    status = CASE WHEN l.outcome = 'retry_pending' AND f.attempts + 1 >= $retry_limit THEN 'gone'
                  ELSE l.outcome END,
    status_cycle = $cycle,
    retry_after_cycle = CASE WHEN l.outcome = 'retry_pending' AND f.attempts + 1 < $retry_limit
                                  THEN $cycle + CAST(pow(2, f.attempts) AS INTEGER)
                             WHEN l.outcome = 'deferred' THEN $cycle + 1 END
FROM s_fetch_log l
WHERE f.url = l.url;
