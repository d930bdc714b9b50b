-- Discovery value of each eligible frontier URL in cycle $cycle (s_discovery): what fetching it is expected to open.
-- learned: the query-based impact (frequency x top-K odds, table top_k_odds) that the URLs a fetched page revealed
-- carried when first scored, shared among the pages that revealed the same URL in the same cycle, over the pages
-- fetched in cycles with odds; estimated for the URL's path group (url_path_group), shrunk towards its host's mean
-- and that towards the mean of all by $shrink pages' worth. opening: the query-based impact of the host's eligible
-- URLs (s_impact) over its crawled pages (s_host_stats, staged by the matching) + 1, so a host whose anchors
-- answer needy queries but that has few pages crawled opens more of itself.
-- inputs: s_host_stats, s_impact
CREATE OR REPLACE TEMP TABLE s_discovery AS
WITH odds_cycles AS (
    SELECT DISTINCT cycle FROM top_k_odds WHERE cycle <= $cycle
), revealed AS (
    SELECT l.src, l.dst, l.cycle, count(*) OVER (PARTITION BY l.cycle, l.dst) AS revealers
    FROM (SELECT DISTINCT src, dst, cycle FROM links WHERE cycle IN (SELECT cycle FROM odds_cycles)) l
    JOIN frontier f ON f.url = l.dst AND f.first_seen_cycle = l.cycle
), worth AS (
    SELECT o.cycle, o.url, exact_sum(n.frequency * o.p_top_k) AS impact
    FROM top_k_odds o JOIN needy_queries n ON n.cycle = o.cycle AND n.query = o.query
    WHERE o.cycle <= $cycle
    GROUP BY o.cycle, o.url
), opened AS (
    SELECT r.src, r.cycle, exact_sum(coalesce(w.impact, 0) / r.revealers) AS value
    FROM revealed r LEFT JOIN worth w ON w.cycle = r.cycle AND w.url = r.dst
    GROUP BY r.src, r.cycle
), fetched AS (
    SELECT p.host, url_path_group(p.url) AS path_group, coalesce(o.value, 0) AS value
    FROM pages p LEFT JOIN opened o ON o.src = p.url AND o.cycle = p.cycle
    WHERE p.cycle IN (SELECT cycle FROM odds_cycles)
), overall AS (
    SELECT coalesce(exact_avg(value), 0) AS mean FROM fetched
), hosts AS (
    SELECT f.host, (exact_sum(f.value) + $shrink * any_value(o.mean)) / (count(*) + $shrink) AS mean
    FROM fetched f CROSS JOIN overall o GROUP BY f.host
), groups AS (
    SELECT path_group, exact_sum(value) AS total, count(*) AS n FROM fetched GROUP BY path_group
), opening AS (
    SELECT e.host, exact_sum(coalesce(i.query_impact, 0)) / (1 + coalesce(any_value(c.pages), 0)) AS opening
    FROM eligible e LEFT JOIN s_impact i ON i.url = e.url LEFT JOIN s_host_stats c ON c.host = e.host
    GROUP BY e.host
)
SELECT e.url,
       round(coalesce((g.total + $shrink * coalesce(h.mean, o.mean)) / (g.n + $shrink), h.mean, o.mean), 9) AS learned,
       round(coalesce(op.opening, 0), 9) AS opening
FROM eligible e
CROSS JOIN overall o
LEFT JOIN groups g ON g.path_group = url_path_group(e.url)
LEFT JOIN hosts h ON h.host = e.host
LEFT JOIN opening op ON op.host = e.host;
