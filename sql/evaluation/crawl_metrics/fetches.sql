-- Every fetch of a batch URL the fetcher tried, refreshes included, in fetch order: its kind (batches.kind), and its
-- outcome: what the check of a stored page found (page_checks.outcome), else what the fetch gave (fetch_log.outcome).
-- Deferred and robots-disallowed URLs were not tried; a URL whose origin's robots.txt did not answer took its batch
-- slot for nothing, and counts as a try.
SELECT l.cycle, l.url, b.rank, b.kind, coalesce(c.outcome, l.outcome) AS outcome
FROM fetch_log l JOIN batches b ON b.fetch_cycle = l.cycle AND b.url = l.url
LEFT JOIN page_checks c ON c.cycle = l.cycle AND c.url = l.url
WHERE url_outcome_asked(l.outcome) OR l.error_class = error_robots_unavailable()
ORDER BY l.cycle, b.rank;
