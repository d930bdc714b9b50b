-- The crawl's own top K of each query of cycle $cycle: its stored copies ranked by the reference ranker.
SELECT query, rank, url FROM query_results WHERE cycle = $cycle ORDER BY query, rank;
