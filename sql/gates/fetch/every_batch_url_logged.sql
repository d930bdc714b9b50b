-- Nothing lost: every URL of the batch has a fetch-log row, and no row is outside the batch.
SELECT coalesce(b.url, l.url) AS url, CASE WHEN l.url IS NULL THEN 'missing' ELSE 'not in batch' END AS problem
FROM (SELECT url FROM batches WHERE cycle = $cycle) b
FULL JOIN g_fetch_log l USING (url)
WHERE b.url IS NULL OR l.url IS NULL;
