-- The moving share m up to cycle $cycle: of the checks that found a page changed, the share whose re-fetch moved it in
-- or out of the top K of a query that has results both in the cycle before the check and in the check's cycle
-- (query_results; checks whose two cycles share no such query tell nothing and are left out), with $weight checks'
-- worth of the prior $prior: (moved + weight x prior) / (checks + weight).
WITH changed AS (
    SELECT cycle, url FROM page_checks WHERE changed AND cycle <= $cycle
), shared AS (
    SELECT a.cycle, a.query
    FROM (SELECT DISTINCT cycle, query FROM query_results) a
    JOIN (SELECT DISTINCT cycle, query FROM query_results) b ON b.cycle = a.cycle - 1 AND b.query = a.query
), told AS (
    SELECT DISTINCT c.cycle, c.url FROM changed c JOIN shared s USING (cycle)
), shown AS (
    SELECT c.cycle, c.url, s.query, count(*) AS cycles_shown
    FROM changed c
    JOIN shared s USING (cycle)
    JOIN query_results r ON r.url = c.url AND r.query = s.query AND r.cycle IN (c.cycle - 1, c.cycle)
    GROUP BY ALL
), moved AS (
    SELECT DISTINCT cycle, url FROM shown WHERE cycles_shown = 1
)
SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM told) AS checks,
       round(((SELECT count(*) FROM moved) + $weight * $prior) / ((SELECT count(*) FROM told) + $weight), 12) AS share;
