-- The cycle's batch with its stored fetch-log row.
SELECT b.url, l.url AS logged_url
FROM batches b LEFT JOIN fetch_log l ON l.cycle = b.fetch_cycle AND l.url = b.url
WHERE b.fetch_cycle = $cycle;
