-- URLs scored in cycle $score_cycle that may take a slot of the batch of cycle $fetch_cycle, best first within each
-- host, a margin above the per-host cap so that robots-disallowed ones can be dropped without starving the host. Their
-- origin answered its latest try (or is a seed's origin not tried yet: the first batch), or gave no page (no_pages) and
-- is due again: one slot for its best URL; their path group is not held (or is due again: one slot likewise); and,
-- when Crawl-delay is obeyed ($obey_crawl_delay), their origin asks for none above $max_delay. URLs of origins that
-- answered but never gave a page (seeds' origins aside) take at most $untested_slots slots
-- (materialize.untested_slots). Of a path group that has not given a page yet, the best $new_path_slots come first and
-- the rest are `overflow`: they go behind every other candidate, so they fill a batch only when nothing else would.
-- Only the $prefix best scored URLs are read (all when NULL): every rule above ranks a URL among URLs of higher
-- priority, so a candidate that is not overflow is the same in the prefix as in the whole (materialize.candidates).
WITH tried AS (
    SELECT origin, state, last_error, next_try_cycle FROM v_origins
), ready AS (
    SELECT origin, NULL AS slots FROM tried WHERE state = origin_ok()
    UNION ALL
    SELECT DISTINCT url_origin(url), NULL FROM frontier
    WHERE source = 'seed' AND url_origin(url) NOT IN (SELECT origin FROM tried)
    UNION ALL
    SELECT origin, 1 FROM tried
    WHERE state <> origin_ok() AND last_error = error_no_pages() AND next_try_cycle <= $fetch_cycle
), paths AS (
    SELECT path_group, refused_total, next_try_cycle
    FROM path_yield
    QUALIFY row_number() OVER (PARTITION BY path_group ORDER BY cycle DESC) = 1
), too_slow AS (
    SELECT origin FROM robots WHERE $obey_crawl_delay AND crawl_delay > $max_delay
), by_origin AS (
    SELECT s.url, f.host, s.priority, s.parts, url_path_group(s.url) AS path_group
    FROM (SELECT * FROM frontier_scores WHERE score_cycle = $score_cycle ORDER BY priority DESC, url LIMIT $prefix) s
    JOIN frontier f USING (url)
    JOIN ready r ON r.origin = url_origin(s.url)
    WHERE r.origin NOT IN (SELECT origin FROM too_slow)
    QUALIFY r.slots IS NULL OR row_number() OVER (PARTITION BY r.origin ORDER BY s.priority DESC, s.url) <= r.slots
), path_slots AS (
    SELECT o.*, p.next_try_cycle IS NOT NULL AS held,
           CASE WHEN p.path_group IS NOT NULL AND p.refused_total IS NULL THEN NULL  -- it gave a page
                WHEN p.next_try_cycle IS NULL THEN $new_path_slots                -- never tried, or not held
                WHEN p.next_try_cycle <= $fetch_cycle THEN 1 ELSE 0 END AS slots
    FROM by_origin o LEFT JOIN paths p USING (path_group)
), by_path AS (
    SELECT url, host, priority, parts, url_origin(url) AS origin,
           coalesce(row_number() OVER (PARTITION BY path_group ORDER BY priority DESC, url) > slots, false) AS overflow
    FROM path_slots
    QUALIFY NOT (held AND overflow)
), proven AS (
    SELECT url_origin(path_group) AS origin FROM path_yield GROUP BY 1 HAVING sum(pages) > 0
    UNION
    SELECT url_origin(url) FROM frontier WHERE source = 'seed'
), by_proof AS (
    SELECT url, host, priority, parts, overflow, origin NOT IN (SELECT origin FROM proven) AS untested
    FROM by_path
    QUALIFY NOT untested
            OR row_number() OVER (PARTITION BY untested ORDER BY overflow, priority DESC, url) <= $untested_slots
)
SELECT url, host, priority, parts, overflow
FROM by_proof
QUALIFY row_number() OVER (PARTITION BY host ORDER BY overflow, priority DESC, url) <= 2 * $per_host_cap;
