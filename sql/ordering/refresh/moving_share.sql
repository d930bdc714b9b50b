-- The moving share m up to cycle $cycle: how much more often a check that found a page changed moved it in or out of
-- the top K of a query than a check that found it unchanged. Between two cycles the index around a page grows and
-- its other pages change too, which moves results whether or not the page changed: the unchanged checks' moves are
-- that, the changed checks' moves beyond them are the change's. A check counts for a query that has results both in
-- the cycle before the check and in the check's cycle (query_results; checks whose two cycles share no such query
-- tell nothing and are left out). Changed: (moved + $weight x prior $prior) / (checks + $weight); unchanged: moved /
-- checks (0 without any); m = (changed - unchanged) / (1 - unchanged), at least 0.
WITH checks AS (
    SELECT cycle, url, changed FROM page_checks WHERE changed IS NOT NULL AND cycle <= $cycle
), shared AS (
    SELECT a.cycle, a.query
    FROM (SELECT DISTINCT cycle, query FROM query_results) a
    JOIN (SELECT DISTINCT cycle, query FROM query_results) b ON b.cycle = a.cycle - 1 AND b.query = a.query
), told AS (
    SELECT c.cycle, c.url, c.changed FROM checks c SEMI JOIN shared s USING (cycle)
), shown AS (
    SELECT c.cycle, c.url, s.query, count(*) AS cycles_shown
    FROM checks c
    JOIN shared s USING (cycle)
    JOIN query_results r ON r.url = c.url AND r.query = s.query AND r.cycle IN (c.cycle - 1, c.cycle)
    GROUP BY ALL
), moved AS (
    SELECT DISTINCT cycle, url FROM shown WHERE cycles_shown = 1
), counts AS (
    SELECT count(*) FILTER (WHERE t.changed) AS checks, count(m.url) FILTER (WHERE t.changed) AS moved,
           count(*) FILTER (WHERE NOT t.changed) AS unchanged_checks,
           count(m.url) FILTER (WHERE NOT t.changed) AS unchanged_moved
    FROM told t LEFT JOIN moved m USING (cycle, url)
), rates AS (
    SELECT *, (moved + $weight * $prior) / (checks + $weight) AS changed_rate,
           coalesce(unchanged_moved / nullif(unchanged_checks, 0), 0) AS unchanged_rate
    FROM counts
)
SELECT moved, checks, unchanged_moved, unchanged_checks,
       round(CASE WHEN unchanged_rate >= 1 THEN 0
                  ELSE greatest(0, (changed_rate - unchanged_rate) / (1 - unchanged_rate)) END, 12) AS share
FROM rates;
