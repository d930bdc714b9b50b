-- Crawl page: the newest batch, each URL with its priority, the parts of it (per policy) and the needy queries
-- whose sketches hold it.
SELECT cycle, rank, url, policy, priority, coalesce(needy_queries, []) AS needy_queries, in_links, pagerank, parts
FROM v_batch_explain
WHERE cycle = (SELECT max(cycle) FROM batches)
ORDER BY rank;
