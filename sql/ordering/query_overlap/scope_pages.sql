-- The pages of temp table s_scope with their scaled PageRank (1 = an average page) and in-links.
-- inputs: s_scope
SELECT f.url, f.pagerank * (SELECT count(*) FROM frontier) AS pagerank, f.in_links
FROM frontier f SEMI JOIN s_scope s ON s.seq = f.discovery_seq
ORDER BY f.url;
