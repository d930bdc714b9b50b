-- The copies the checks of cycle $cycle found changed and replaced (url, title, text), and the queries to rank each in
-- (queries: those of the cycle's reference results whose top K held the page in the cycle before or holds it now).
WITH changed AS (
    SELECT r.url, r.title, r.text
    FROM replaced_pages r JOIN page_checks c ON c.url = r.url AND c.cycle = r.replaced_cycle
    WHERE r.replaced_cycle = $cycle AND c.changed
), asked AS (
    SELECT DISTINCT query FROM query_results WHERE cycle = $cycle AND source = 'reference'
)
SELECT c.url, c.title, c.text, list(DISTINCT r.query ORDER BY r.query) AS queries
FROM changed c
JOIN query_results r ON r.url = c.url AND r.cycle IN (score_cycle_of($cycle), $cycle)
SEMI JOIN asked a ON a.query = r.query
GROUP BY c.url, c.title, c.text
ORDER BY c.url;
