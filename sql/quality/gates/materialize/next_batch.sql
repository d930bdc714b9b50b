-- The batch cycle $cycle chose for the next one, with what the checks need to know of each URL: whether it is crawled
-- and in a state as its kind wants (a new URL still to fetch and not crawled, a refresh a stored, fetched page), and
-- whether its origin answered its latest try (or is a seed's origin not tried yet, or gave no page and is due its one
-- slot again).
SELECT b.url, b.host, b.kind, b.priority, f.status, p.url IS NOT NULL AS crawled,
       (p.url IS NOT NULL) = (b.kind = 'refresh') AS crawled_as_kind,
       coalesce(CASE WHEN b.kind = 'refresh' THEN f.status = state_fetched() ELSE url_state_to_fetch(f.status) END, false)
           AS state_as_kind,
       robots_allowed(b.url) AS robots_allowed,
       coalesce(o.state = origin_ok()
                OR (o.last_error = error_no_pages() AND o.next_try_cycle <= b.fetch_cycle),
                f.source = 'seed' OR url_origin(b.url) IN (SELECT url_origin(url) FROM frontier WHERE source = 'seed'))
           AS origin_answered
FROM batches b
LEFT JOIN frontier f USING (url)
LEFT JOIN pages p USING (url)
LEFT JOIN v_origins o ON o.origin = url_origin(b.url)
WHERE b.score_cycle = $cycle;
