-- The reference top K of every query of cycle $cycle: what the top-K odds learn a page must be among.
SELECT query, url, score FROM query_results WHERE cycle = $cycle;
