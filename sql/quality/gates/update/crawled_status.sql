-- The frontier state of pages the cycle crawled or whose state it changed (earlier cycles checked theirs).
SELECT p.url, f.status
FROM pages p JOIN frontier f USING (url)
WHERE p.cycle = $cycle OR f.status_cycle = $cycle;
