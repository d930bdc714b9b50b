-- Replace the batch of cycle $fetch_cycle (chosen by the scores of cycle $score_cycle) with s_batch: its new URLs under
-- the ordering policy $policy, its refreshes under the refresh policy $refresh_policy (a new URL's parts hold its
-- expected impact and calibration when the refresh policy weighed it: ordering/refresh/new_impact).
-- inputs: s_batch
DELETE FROM batches WHERE fetch_cycle = $fetch_cycle;
INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority, parts, kind)
SELECT $fetch_cycle, $score_cycle, url, host, rank, CASE kind WHEN 'new' THEN $policy ELSE $refresh_policy END,
       priority, parts, kind
FROM s_batch;
