-- The batch chosen for the next cycle, with what the checks need to know of each URL.
SELECT b.url, b.host, b.priority, f.status, p.url IS NOT NULL AS crawled, robots_allowed(b.url) AS robots_allowed
FROM batches b
LEFT JOIN frontier f USING (url)
LEFT JOIN pages p USING (url)
WHERE b.cycle = $cycle + 1;
