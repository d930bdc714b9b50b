-- Crawl page: the queries that steered the newest batch.
SELECT cycle, rank, query, frequency, improvability, neediness FROM v_needy_queries ORDER BY rank;
