-- Report: the head ($rows URLs) of the newest batch, with why each URL is in it: new (its priority and what it is
-- made of) or a refresh (the refresh policy's value and why).
SELECT rank, url, kind, round(priority, 4) AS priority, why
FROM v_batch_explain
WHERE fetch_cycle = (SELECT max(fetch_cycle) FROM batches)
LIMIT $rows;
