-- Each query's top K by the reference ranker over the whole snapshot (cycle $cycle of the truth's database).
SELECT query, rank, url FROM query_results WHERE cycle = $cycle ORDER BY query, rank;
