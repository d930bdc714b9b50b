-- Per-cycle figures after the update of cycle $cycle; of its refreshes: the batch's stored pages fetched again, and of
-- their checks those answered 304, those that found the main text changed, and those after which the page left the
-- index (gone, or now redirecting).
UPDATE cycles SET
    batch_size = (SELECT count(*) FROM batches WHERE fetch_cycle = $cycle),
    refreshes = (SELECT count(*) FROM batches WHERE fetch_cycle = $cycle AND kind = 'refresh'),
    checks_not_modified = (SELECT count(*) FROM page_checks WHERE cycle = $cycle AND outcome = check_not_modified()),
    checks_changed = (SELECT count(*) FROM page_checks WHERE cycle = $cycle AND outcome = check_changed()),
    checks_gone = (SELECT count(*) FROM page_checks WHERE cycle = $cycle AND check_leaves_index(outcome)),
    fetched = (SELECT count(*) FROM pages WHERE cycle = $cycle),
    errors = (SELECT count(*) FROM fetch_log WHERE cycle = $cycle AND error_class IS NOT NULL),
    new_urls = (SELECT count(*) FROM frontier WHERE first_seen_cycle = $cycle),
    pages_total = (SELECT count(*) FROM pages)
WHERE cycle = $cycle;
-- What the batch's slots gave: a page (2xx, also after same-host redirects), a try without a page (by class: the
-- fetch's error class, http_4xx / http_5xx, or redirect when the target is another host's), or no try at all (by
-- reason: politeness and robots rules the fetch met); the slots of origins that did not answer this cycle; and the
-- origins probed outside the batch. waste_share is the share of slots without a page, rounded so replays compare.
UPDATE cycles SET
    slots_fetched = w.fetched,
    slots_failed = w.failed,
    slots_skipped = w.skipped,
    slots_unanswered = (SELECT count(*) FROM fetch_log l
                        JOIN origin_tries t ON t.cycle = l.cycle AND t.origin = url_origin(l.url)
                        WHERE l.cycle = $cycle AND t.error_class <> error_no_pages()),
    waste_share = round(1 - w.fetched / nullif(w.slots, 0), 9),
    probes = (SELECT count(*) FROM origin_tries WHERE cycle = $cycle AND probe)
FROM (
    SELECT coalesce(sum(n), 0) AS slots,
           coalesce(sum(n) FILTER (WHERE kind = 'page'), 0) AS fetched,
           coalesce(to_json(map_from_entries(list((class, n) ORDER BY class) FILTER (WHERE kind = 'tried'))),
                    '{}') AS failed,
           coalesce(to_json(map_from_entries(list((class, n) ORDER BY class) FILTER (WHERE kind = 'skipped'))),
                    '{}') AS skipped
    FROM (
        SELECT kind, class, count(*) AS n
        FROM (
            SELECT CASE WHEN status BETWEEN 200 AND 299 THEN 'page'
                        -- not asked: politeness (time limit, Retry-After, Crawl-delay, a failing host) or robots.txt
                        WHEN error_skipped_slot(error_class) THEN 'skipped'
                        ELSE 'tried' END AS kind,
                   CASE WHEN error_class = error_http_error() THEN 'http_' || (status // 100) || 'xx'
                        WHEN error_class IS NULL AND status BETWEEN 300 AND 399 THEN 'redirect'
                        ELSE error_class END AS class
            FROM fetch_log WHERE cycle = $cycle
        )
        GROUP BY ALL
    )
) w
WHERE cycles.cycle = $cycle;
