-- Report: the head ($rows URLs) of the newest batch, with why each URL is in it.
SELECT rank, url, round(priority, 4) AS priority, query_impact, round(prestige_part, 4) AS prestige_part,
       needy_queries[1:3] AS needy_queries
FROM v_batch_explain
WHERE fetch_cycle = (SELECT max(fetch_cycle) FROM batches)
LIMIT $rows;
