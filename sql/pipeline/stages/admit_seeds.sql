-- Admit seed URLs (staged as s_seeds: url, host, seq) that the frontier does not know yet and the crawl scope ($scope,
-- see scope_reason) admits.
-- inputs: s_seed_rejects, s_seeds
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source, hops)
SELECT s.url, s.host, 0, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY s.seq),
       'seed', 0
FROM s_seeds s ANTI JOIN frontier f ON f.url = s.url
WHERE scope_reason(s.url, s.host, 0, $scope) IS NULL;

-- Seed lines canonicalize refused (staged as s_seed_rejects: line, url, reason), then seeds out of scope, as cycle 0
-- rejects of the seeds file; a second init replaces that file's rows instead of adding to them.
DELETE FROM url_rejects WHERE cycle = 0 AND src = $source;
INSERT INTO url_rejects (cycle, src, url, reason) SELECT 0, $source, url, reason FROM s_seed_rejects ORDER BY line;
INSERT INTO url_rejects (cycle, src, url, reason)
SELECT 0, $source, url, scope_reason(url, host, 0, $scope) FROM s_seeds
WHERE scope_reason(url, host, 0, $scope) IS NOT NULL
ORDER BY seq;
