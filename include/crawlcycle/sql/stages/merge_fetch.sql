-- Merge the shards' fetch output of cycle $cycle (staged as tables s_fetch_log, s_requests, s_hosts, s_robots,
-- s_sitemaps).
INSERT INTO fetch_log
SELECT $cycle, shard, url, host, final_url, status, redirects, bytes, content_type, started_at, finished_at,
       elapsed_ms, error_class, truncated, outcome
FROM s_fetch_log;
INSERT INTO fetch_requests (cycle, host, url, started_at, finished_at, new_connection)
SELECT $cycle, host, url, started_at, finished_at, new_connection FROM s_requests;
INSERT OR REPLACE INTO hosts (host, crawl_delay, delay, last_response_ms, errors, backoff_until, updated_cycle,
                              last_request_at)
SELECT host, crawl_delay, delay, last_response_ms, errors, backoff_until, $cycle, last_request_at
FROM s_hosts;
INSERT OR REPLACE INTO robots
SELECT origin, host, status, fetched_at, robots_txt, crawl_delay, sitemaps, $cycle FROM s_robots;
INSERT INTO sitemap_fetches
SELECT $cycle, url, host, depth, status, kind, entries, admitted, reason FROM s_sitemaps;
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
