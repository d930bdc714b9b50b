-- Every URL the fetcher tried, once (its first try), in fetch order, with the 2xx page it ended on (NULL for a
-- 404 or a failure). Deferred and robots-disallowed URLs were not tried; a URL whose origin's robots.txt did not
-- answer took its batch slot for nothing, and counts as a try.
SELECT l.url, l.cycle, b.rank,
       CASE WHEN l.status BETWEEN 200 AND 299 THEN coalesce(l.final_url, l.url) END AS page
FROM fetch_log l JOIN batches b ON b.fetch_cycle = l.cycle AND b.url = l.url
WHERE url_outcome_asked(l.outcome) OR l.error_class = error_robots_unavailable()
QUALIFY row_number() OVER (PARTITION BY l.url ORDER BY l.cycle, b.rank) = 1
ORDER BY l.cycle, b.rank;
