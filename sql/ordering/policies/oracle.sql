-- The simulator's reference ordering: true impact (s_true_impact, the ground truth of the judge the run is for);
-- the URLs of no impact after all of those with some, in discovery order, so that the oracle discovers as bfs does.
-- inputs: s_true_impact
SELECT e.url, CASE WHEN t.impact > 0 THEN t.impact ELSE -e.discovery_seq::DOUBLE END AS priority,
       json_object('true_impact', coalesce(t.impact, 0)) AS parts
FROM eligible e LEFT JOIN s_true_impact t USING (url);
