-- The cycle's batch side by side with the fetch log: a NULL on either side is a URL lost or one too many.
SELECT coalesce(b.url, l.url) AS url, b.url AS batch_url, l.url AS logged_url
FROM (SELECT url FROM batches WHERE fetch_cycle = $cycle) b
FULL JOIN (SELECT url FROM g_fetch_log) l USING (url);
