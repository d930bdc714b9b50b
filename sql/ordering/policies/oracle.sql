-- The simulator's reference ordering: true impact (s_true_impact: url, impact and the page a fetch of the URL ends on,
-- the ground truth of the judge the run is for), counted while that page is not fetched and for one URL of the page
-- (a directory URL redirects to its index page: the page's own URL first); the URLs of no impact after all of those
-- with some, in discovery order, so that the oracle discovers as bfs does.
-- inputs: s_true_impact
WITH credited AS (
    SELECT e.url, e.discovery_seq, t.impact,
           t.page IS NOT NULL AND p.url IS NULL
           AND row_number() OVER (PARTITION BY t.page ORDER BY e.url <> t.page, e.url) = 1 AS counts
    FROM eligible e LEFT JOIN s_true_impact t USING (url) LEFT JOIN pages p ON p.url = t.page
)
SELECT url, CASE WHEN impact > 0 AND counts THEN impact ELSE -discovery_seq::DOUBLE END AS priority,
       json_object('true_impact', coalesce(impact, 0)) AS parts
FROM credited;
