-- Report: the latest cycle's $rows most needy queries.
SELECT rank, query, frequency, round(improvability, 3) AS improvability, round(neediness, 3) AS neediness
FROM v_needy_queries
LIMIT $rows;
