-- Frontier URLs that may enter the batch of cycle $next_cycle: open, due, not crawled, and in the crawl scope as it is
-- set now ($scope, see scope_reason), so that a narrower scope also holds back URLs admitted before.
CREATE OR REPLACE TEMP TABLE eligible AS
SELECT f.*
FROM frontier f
WHERE url_state_due(f.status, f.retry_after_cycle, $next_cycle)
  AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = f.url)
  AND scope_reason(f.url, f.host, f.hops, $scope) IS NULL;
