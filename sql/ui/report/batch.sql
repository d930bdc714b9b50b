-- Report: the head ($rows URLs) of the newest batch, with why each URL is in it: new (its priority, its query-based
-- impact and prestige part) or a refresh (the refresh policy's value and why).
SELECT rank, url, kind, round(priority, 4) AS priority, query_impact, round(prestige_part, 4) AS prestige_part,
       needy_queries[1:3] AS needy_queries, why
FROM v_batch_explain
WHERE fetch_cycle = (SELECT max(fetch_cycle) FROM batches)
LIMIT $rows;
