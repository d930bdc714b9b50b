-- The moving share m up to cycle $cycle: how much more often a check that found a page changed moved it in or out of
-- the top K of a query than a check that found it unchanged. Between two cycles the index around a page grows and
-- its other pages change too, which moves results whether or not the page changed: the unchanged checks' moves are
-- that, the changed checks' moves beyond them are the change's. A check counts for a query that has results both in
-- the cycle before the check and in the check's cycle (query_results; checks whose two cycles share no such query
-- tell nothing and are left out). Per cycle c: m_c = (changed moved - unchanged moved) / (1 - unchanged moved), at
-- least 0, the unchanged share of c's own checks (of all cycles' when c has none); m = the changed checks' m_c with
-- $weight checks' worth of the prior $prior: (sum of m_c over changed checks + $weight x $prior) / (changed checks +
-- $weight). Until a change has been seen, the prior: unchanged checks alone tell how much the index moves, not how much
-- a change does.
WITH checks AS (
    SELECT cycle, url, changed FROM page_checks WHERE changed IS NOT NULL AND cycle <= $cycle
), shared AS (
    SELECT a.cycle, a.query
    FROM (SELECT DISTINCT cycle, query FROM query_results) a
    JOIN (SELECT DISTINCT cycle, query FROM query_results) b ON b.cycle = a.cycle - 1 AND b.query = a.query
), told AS (
    SELECT DISTINCT c.cycle, c.url, c.changed FROM checks c JOIN shared s USING (cycle)
), shown AS (
    SELECT c.cycle, c.url, s.query, count(*) AS cycles_shown
    FROM checks c
    JOIN shared s USING (cycle)
    JOIN query_results r ON r.url = c.url AND r.query = s.query AND r.cycle IN (c.cycle - 1, c.cycle)
    GROUP BY ALL
), moved AS (
    SELECT DISTINCT cycle, url FROM shown WHERE cycles_shown = 1
), per_cycle AS (
    SELECT t.cycle, count(*) FILTER (WHERE t.changed) AS checks, count(m.url) FILTER (WHERE t.changed) AS moved,
           count(*) FILTER (WHERE NOT t.changed) AS unchanged_checks,
           count(m.url) FILTER (WHERE NOT t.changed) AS unchanged_moved
    FROM told t LEFT JOIN moved m USING (cycle, url)
    GROUP BY t.cycle
), base AS (
    SELECT *, coalesce(unchanged_moved / nullif(unchanged_checks, 0),
                       sum(unchanged_moved) OVER () / nullif(sum(unchanged_checks) OVER (), 0), 0) AS unchanged_rate
    FROM per_cycle
), effect AS (
    SELECT *, CASE WHEN checks = 0 OR unchanged_rate >= 1 THEN 0
                   ELSE greatest(0, (moved / checks - unchanged_rate) / (1 - unchanged_rate)) END AS share
    FROM base
)
SELECT coalesce(sum(moved), 0) AS moved, coalesce(sum(checks), 0) AS checks,
       coalesce(sum(unchanged_moved), 0) AS unchanged_moved, coalesce(sum(unchanged_checks), 0) AS unchanged_checks,
       round((coalesce(sum(checks * share), 0) + $weight * $prior) / (coalesce(sum(checks), 0) + $weight), 12) AS share
FROM effect;
