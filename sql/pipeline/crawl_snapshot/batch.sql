-- Crawl page: the newest batch, each URL new or a refresh, with its priority, why, the parts of it (per policy) and
-- the needy queries it may answer, each with the odds the URL enters its top K.
SELECT fetch_cycle, score_cycle, rank, url, kind, policy, priority, why,
       [needy_queries[i] || coalesce(' (' || printf('%.2f', needy_odds[i]) || ')', '')
        FOR i IN range(1, len(coalesce(needy_queries, [])) + 1)] AS needy_queries,
       in_links, pagerank, parts
FROM v_batch_explain
WHERE fetch_cycle = (SELECT max(fetch_cycle) FROM batches)
ORDER BY rank;
