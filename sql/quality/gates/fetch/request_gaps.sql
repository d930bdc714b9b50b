-- Every request after the first to a host: the gap since the previous request ended, and the gap required, the
-- host's delay (min_delay or, when obeyed, its Crawl-delay, capped by max_delay) less 10 ms for clock granularity.
WITH r AS (
    SELECT host, url, started_at,
           started_at - lag(finished_at) OVER (PARTITION BY host ORDER BY started_at) AS gap
    FROM g_requests
)
SELECT r.host, r.url, round(r.gap, 3) AS gap,
       least($max_delay, greatest($min_delay, CASE WHEN $obey_crawl_delay THEN coalesce(h.crawl_delay, 0) END))
           - 0.01 AS required
FROM r LEFT JOIN g_hosts h USING (host)
WHERE r.gap IS NOT NULL;
