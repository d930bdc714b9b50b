-- The cycle's batch with its stored fetch-log row.
SELECT b.url, l.url AS logged_url
FROM batches b LEFT JOIN fetch_log l ON l.cycle = b.cycle AND l.url = b.url
WHERE b.cycle = $cycle;
