-- Ground truth of a simulation (crawlcycle.evaluation.simulator): every 2xx page of the snapshot the parser reads as
-- HTML-or-unknown, with its true impact: the summed frequency of the queries (staged as s_workload) whose top K,
-- by the reference ranker over the whole snapshot (cycle $cycle), holds it.
-- inputs: s_workload
WITH impact AS (
    SELECT r.url, sum(w.frequency) AS impact
    FROM query_results r JOIN s_workload w ON w.query = r.query
    WHERE r.cycle = $cycle GROUP BY r.url)
SELECT p.url, f.in_links, coalesce(i.impact, 0)::DOUBLE AS impact
FROM pages p JOIN frontier f USING (url) LEFT JOIN impact i USING (url)
WHERE p.reason IS DISTINCT FROM 'not_html'
ORDER BY p.url;
