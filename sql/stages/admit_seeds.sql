-- Admit seed URLs (staged as s_seeds: url, host, seq) that the frontier does not know yet.
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source)
SELECT s.url, s.host, 0, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY s.seq),
       'seed'
FROM s_seeds s ANTI JOIN frontier f ON f.url = s.url;
