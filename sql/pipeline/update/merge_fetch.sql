-- Merge the shards' fetch output of cycle $cycle (staged as tables s_fetch_log, s_requests, s_hosts, s_robots,
-- s_sitemaps, s_sitemap_urls, s_origin_tries).
-- inputs: s_fetch_log, s_hosts, s_origin_tries, s_requests, s_robots, s_sitemap_urls, s_sitemaps
INSERT INTO fetch_log
SELECT $cycle, shard, url, host, final_url, status, redirects, bytes, content_type, started_at, finished_at,
       elapsed_ms, error_class, truncated, outcome, etag, last_modified, payload_digest
FROM s_fetch_log;
INSERT INTO fetch_requests (cycle, host, url, started_at, finished_at, new_connection, attempt)
SELECT $cycle, host, url, started_at, finished_at, new_connection, attempt FROM s_requests;
INSERT OR REPLACE INTO hosts (host, crawl_delay, delay, last_response_ms, errors, backoff_until, updated_cycle,
                              last_request_at, errors_before)
SELECT host, crawl_delay, delay, last_response_ms, errors, backoff_until, $cycle, last_request_at, errors_before
FROM s_hosts;
-- A robots.txt copy keeps the cycle that fetched it (a replay of that cycle fetches it again, as the first run did).
INSERT OR REPLACE INTO robots
SELECT s.origin, s.host, s.status, s.fetched_at, s.robots_txt, s.crawl_delay, s.sitemaps,
       CASE WHEN r.origin IS NOT NULL AND s.fetched_at IS NOT DISTINCT FROM r.fetched_at THEN r.updated_cycle
            ELSE $cycle END
FROM s_robots s LEFT JOIN robots r USING (origin);
-- Origins: an answer resets the count of failures; the n-th failure in a row holds the origin's URLs out of the
-- batches until cycle $cycle + $origin_retry_cycles * 2^(n-1), and from $origin_park_after failures on it is parked,
-- tried every $origin_park_cycles cycles. An origin that answered, but only 4xx (429 aside) to every URL of the batch
-- asked, and never gave a page, failed too (no_pages): what counts for it is a page, not its robots.txt.
INSERT INTO origin_tries
WITH asked AS (
    SELECT url_origin(url) AS origin,
           count(*) FILTER (WHERE status IS NOT NULL) AS answered,
           count(*) FILTER (WHERE status BETWEEN 400 AND 499 AND status <> 429) AS refused
    FROM s_fetch_log GROUP BY 1
), judged AS (
    SELECT t.origin, t.host, t.probe, t.tried_at,
           CASE WHEN t.error_class IS NULL AND a.answered > 0 AND a.refused = a.answered
                     AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.host = t.host AND url_origin(p.url) = t.origin)
                THEN error_no_pages() ELSE t.error_class END AS error_class
    FROM s_origin_tries t LEFT JOIN asked a USING (origin)
), counted AS (
    SELECT j.*, CASE WHEN j.error_class IS NULL THEN 0 ELSE coalesce(p.failures, 0) + 1 END AS failures
    FROM judged j
    LEFT JOIN (SELECT origin, failures FROM origin_tries WHERE cycle < $cycle
               QUALIFY row_number() OVER (PARTITION BY origin ORDER BY cycle DESC) = 1) p USING (origin)
)
SELECT $cycle, origin, host, probe, tried_at, error_class, failures,
       CASE WHEN failures = 0 THEN origin_ok() WHEN failures >= $origin_park_after THEN origin_parked()
            ELSE origin_backoff() END,
       CASE WHEN failures = 0 THEN NULL
            WHEN failures >= $origin_park_after THEN $cycle + $origin_park_cycles
            ELSE $cycle + CAST($origin_retry_cycles * pow(2, failures - 1) AS INTEGER) END
FROM counted
ORDER BY origin;
-- Path groups: 4xx answers add up while the group never gave a page; from $path_refusals on it is held, and its n-th
-- try while held is followed by a wait of 2^(n-1) cycles.
INSERT INTO path_yield
WITH now AS (
    SELECT url_path_group(url) AS path_group, count(*) AS answered,
           count(*) FILTER (WHERE status BETWEEN 200 AND 299) AS pages,
           count(*) FILTER (WHERE status BETWEEN 400 AND 499 AND status <> 429) AS refused
    FROM s_fetch_log WHERE status IS NOT NULL
    GROUP BY 1
), counted AS (
    SELECT n.*, CASE WHEN n.pages > 0 OR (b.path_group IS NOT NULL AND b.refused_total IS NULL) THEN NULL
                     ELSE coalesce(b.refused_total, 0) + n.refused END AS refused_total,
           coalesce(b.held_tries, 0) AS held_before
    FROM now n
    LEFT JOIN (SELECT path_group, refused_total, held_tries FROM path_yield WHERE cycle < $cycle
               QUALIFY row_number() OVER (PARTITION BY path_group ORDER BY cycle DESC) = 1) b USING (path_group)
)
SELECT $cycle, path_group, answered, pages, refused, refused_total,
       CASE WHEN refused_total >= $path_refusals THEN held_before + 1 ELSE 0 END,
       CASE WHEN refused_total >= $path_refusals THEN $cycle + CAST(pow(2, held_before) AS INTEGER) END
FROM counted
ORDER BY path_group;
INSERT INTO sitemap_fetches
SELECT $cycle, url, host, depth, status, kind, entries, admitted, reason, bad_lastmods FROM s_sitemaps;
-- A lastmod the URL's sitemaps had not given it before: its first, or a moved one (a host's run admits a URL once).
INSERT INTO sitemap_lastmods
SELECT $cycle, u.url, s.host, u.lastmod
FROM s_sitemap_urls u JOIN s_sitemaps s ON s.url = u.sitemap
LEFT JOIN (SELECT url, arg_max(lastmod, cycle) AS lastmod FROM sitemap_lastmods WHERE cycle < $cycle GROUP BY url) k
    ON k.url = u.url
WHERE u.reason IS NULL AND u.lastmod IS NOT NULL AND u.lastmod IS DISTINCT FROM k.lastmod
ORDER BY u.url;
-- URL states after the fetch, by the transitions of crawlcycle.contracts.url_states: a new URL's transient failure
-- counts an attempt and waits 1, 2, 4, ... cycles, until url_attempts; a stored page fetched again (a refresh) stays
-- fetched unless it is now gone or redirects.
UPDATE frontier f SET
    attempts = f.attempts + url_attempt_failed(l.outcome, l.refresh)::INTEGER,
    status = url_state_after(l.outcome, f.attempts, $url_attempts, l.refresh),
    status_cycle = $cycle,
    retry_after_cycle = url_retry_after(l.outcome, f.attempts, $url_attempts, $cycle, l.refresh)
FROM s_fetch_log l
WHERE f.url = l.url;
