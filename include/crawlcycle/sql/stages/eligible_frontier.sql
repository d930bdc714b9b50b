-- Frontier URLs that may enter the batch of cycle $next_cycle: open, due, and not crawled.
CREATE OR REPLACE TEMP TABLE eligible AS
SELECT f.*
FROM frontier f
WHERE (f.status = 'unfetched'
       OR (f.status IN ('retry_pending', 'deferred') AND coalesce(f.retry_after_cycle, 0) <= $next_cycle))
  AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = f.url);
