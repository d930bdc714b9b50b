-- The copies the checks of cycle $cycle found changed and replaced (url, title, text), and the queries to rank each in
-- (queries: those of the cycle's reference results whose top K held the page in the cycle before or holds it now).
-- The queries are gathered by URL before the texts join them: a page in hundreds of results carries its text once,
-- not once per result row (48 changed pages of real documentation, each in hundreds of top Ks, took gigabytes).
WITH changed AS (
    SELECT r.url
    FROM replaced_pages r JOIN page_checks c ON c.url = r.url AND c.cycle = r.replaced_cycle
    WHERE r.replaced_cycle = $cycle AND c.changed
), asked AS (
    SELECT DISTINCT query FROM query_results WHERE cycle = $cycle AND source = 'reference'
), held AS (
    SELECT r.url, list(DISTINCT r.query ORDER BY r.query) AS queries
    FROM query_results r
    SEMI JOIN changed c ON c.url = r.url
    SEMI JOIN asked a ON a.query = r.query
    WHERE r.cycle IN (score_cycle_of($cycle), $cycle)
    GROUP BY r.url
)
SELECT h.url, r.title, r.text, h.queries
FROM held h JOIN replaced_pages r ON r.url = h.url AND r.replaced_cycle = $cycle
ORDER BY h.url;
