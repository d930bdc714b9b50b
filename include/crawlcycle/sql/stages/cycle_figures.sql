-- Per-cycle figures after the update of cycle $cycle.
UPDATE cycles SET
    batch_size = (SELECT count(*) FROM batches WHERE cycle = $cycle),
    fetched = (SELECT count(*) FROM pages WHERE cycle = $cycle),
    errors = (SELECT count(*) FROM fetch_log WHERE cycle = $cycle AND error_class IS NOT NULL),
    new_urls = (SELECT count(*) FROM frontier WHERE first_seen_cycle = $cycle),
    pages_total = (SELECT count(*) FROM pages)
WHERE cycle = $cycle;
