-- Per host, for S' features: crawled pages, and the share of them in some query's top K of cycle $cycle.
CREATE OR REPLACE TEMP TABLE s_host_stats AS
SELECT p.host, count(*) AS pages, count(r.url) / count(*) AS shown_share
FROM pages p
LEFT JOIN (SELECT DISTINCT url FROM query_results WHERE cycle = $cycle) r USING (url)
GROUP BY p.host;
