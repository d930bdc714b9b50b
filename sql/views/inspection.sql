-- Views for the questions people ask of the crawl database.

-- How did each cycle go, what did its batch slots give (waste), did the query-driven part of its policy engage, and
-- how fresh is the index: refreshes in its batch, what its checks found, the estimated freshness it leaves, and the
-- share of refreshes in the batch it chose?
CREATE OR REPLACE VIEW v_cycle_summary AS
SELECT c.cycle, c.interval_start,
       CASE WHEN c.query_partition = c.interval_start THEN c.query_rows || ' rows'
            WHEN c.query_partition IS NOT NULL THEN 'missing: read ' || c.query_partition || ', ' || c.query_rows || ' rows'
            WHEN c.query_rows IS NOT NULL THEN 'missing: empty' END AS query_log,
       c.policy, CASE WHEN c.status = cycle_failed() THEN c.status || ': ' || c.failure ELSE c.status END AS status,
       c.batch_size, c.fetched, c.errors, c.new_urls,
       c.pages_total, c.frontier_open, c.next_batch,
       round(epoch(c.finished_at - c.started_at), 1) AS seconds,
       (SELECT count(*) FROM dq_results d WHERE d.cycle = c.cycle AND NOT d.success) AS gate_failures,
       c.slots_fetched, c.slots_failed, c.slots_skipped, c.slots_unanswered, c.waste_share, c.probes,
       c.untested_slots,
       c.needy_queries, c.needy_with_candidates, c.sketch_frontier_pages, c.batch_query_share, c.batch_query_mass,
       c.refreshes, c.checks_not_modified, c.checks_changed, c.checks_gone, c.est_freshness, c.next_refresh_share
FROM cycles c
ORDER BY c.cycle;

-- What is in the next batch, and why? (kind: new, or a refresh of a stored page)
CREATE OR REPLACE VIEW v_next_batch AS
SELECT b.fetch_cycle, b.score_cycle, b.rank, b.url, b.host, b.kind, b.policy, b.priority, b.parts, f.in_links,
       f.pagerank,
       f.first_seen_cycle, f.source
FROM batches b
JOIN frontier f USING (url)
WHERE b.fetch_cycle = (SELECT max(fetch_cycle) FROM batches)
ORDER BY b.rank;

-- Which hosts are slow or failing? Politeness is per host; robots.txt per origin (its answer per origin here).
CREATE OR REPLACE VIEW v_host_health AS
SELECT h.host, r.robots, h.crawl_delay, h.delay, h.last_response_ms, h.errors AS consecutive_errors,
       h.backoff_until, count(l.url) AS fetches, count(l.error_class) AS errors,
       round(avg(l.elapsed_ms), 1) AS avg_ms, round(quantile_cont(l.elapsed_ms, 0.95), 1) AS p95_ms
FROM hosts h
LEFT JOIN (SELECT host, string_agg(origin || ' ' || coalesce(CAST(status AS VARCHAR), 'unreachable'), ', '
                                   ORDER BY origin) AS robots
           FROM robots GROUP BY host) r USING (host)
LEFT JOIN fetch_log l USING (host)
GROUP BY ALL
ORDER BY avg_ms DESC NULLS LAST;

-- Which robots.txt rules are in force, per origin (scheme, host, port), and the sitemaps they name.
CREATE OR REPLACE VIEW v_robots AS
SELECT origin, host, status, to_timestamp(fetched_at) AS fetched_at, crawl_delay, sitemaps,
       len(string_split(coalesce(robots_txt, ''), chr(10))) AS lines, updated_cycle
FROM robots
ORDER BY host, origin;

-- What the sitemaps of each cycle gave: URLs handed to the frontier, and why a file was not read whole.
CREATE OR REPLACE VIEW v_sitemaps AS
SELECT s.cycle, s.url, s.host, s.depth, s.status, s.kind, s.entries, s.admitted, s.reason, s.bad_lastmods,
       (SELECT count(*) FROM frontier f WHERE f.source = 'sitemap' AND f.first_seen_cycle = s.cycle
                                          AND f.host = s.host) AS host_urls_new_from_sitemaps
FROM sitemap_fetches s
ORDER BY s.cycle, s.host, s.depth, s.url;

-- Which queries steer the latest cycle?
CREATE OR REPLACE VIEW v_needy_queries AS
SELECT * FROM needy_queries
WHERE cycle = (SELECT max(cycle) FROM needy_queries)
ORDER BY rank;

-- URLs still to fetch, with what is known of them.
CREATE OR REPLACE VIEW v_frontier_open AS
SELECT * FROM frontier WHERE url_state_to_fetch(status);

-- Can each origin (scheme, host, port) be fetched? Its latest try: ok (its URLs take batch slots), backoff or parked
-- (they wait, kept in the frontier, until the probe of its robots.txt in cycle next_try_cycle answers).
CREATE OR REPLACE VIEW v_origins AS
SELECT origin, host, state, failures, error_class AS last_error, cycle AS last_tried_cycle,
       to_timestamp(tried_at) AS last_tried_at, probe AS last_try_was_probe, next_try_cycle
FROM origin_tries
QUALIFY row_number() OVER (PARTITION BY origin ORDER BY cycle DESC) = 1
ORDER BY host, origin;

-- Origins held out of the batches (backoff or parked): why, until which cycle, and the frontier URLs waiting on them.
CREATE OR REPLACE VIEW v_origins_held AS
SELECT o.origin, o.state, o.failures, o.last_error, o.last_tried_cycle, o.last_tried_at, o.next_try_cycle,
       count(f.url) AS waiting_urls
FROM v_origins o
LEFT JOIN v_frontier_open f ON f.host = o.host AND url_origin(f.url) = o.origin
WHERE o.state <> origin_ok()
GROUP BY ALL
ORDER BY waiting_urls DESC, o.origin;

-- Fetch errors by class and cycle.
CREATE OR REPLACE VIEW v_fetch_errors AS
SELECT cycle, error_class, count(*) AS urls
FROM fetch_log WHERE error_class IS NOT NULL
GROUP BY ALL ORDER BY cycle, urls DESC;

-- How well each query is served in each cycle: the average score of its top K (exact_avg, so that
-- replays compare equal). Needy-query selection and the improvability measurement read it.
CREATE OR REPLACE VIEW v_query_topk_score AS
SELECT cycle, query, round(exact_avg(score), 9) AS avg_score, count(*) AS results
FROM query_results
GROUP BY cycle, query;

-- Why each URL of each batch was chosen: a new URL (kind new) by its priority under the ordering policy, split into
-- the query-based and prestige-based impact and the discovery value (policy hybrid) with the weights that mixed them
-- (the settings', or learnt: model_runs hybrid_mix), the needy queries it may answer
-- and the odds it enters each one's top K (top_k_odds), and its expected impact and the calibration of that estimate
-- when the refresh policy weighed it against refreshes; a stored page fetched again (kind refresh) by the refresh
-- policy's value: P(changed since its last check), its change rate and the level it was pooled at, whether its
-- sitemap's lastmod decided P instead (by_sitemap), the host's checks since its own and the changes they found, the
-- impact it carries, the moving share, or the policy's due rule. `why` says it in words. Other policies show their
-- own parts.
CREATE OR REPLACE VIEW v_batch_explain AS
SELECT b.fetch_cycle, b.score_cycle, b.rank, b.url, b.kind, b.policy, b.priority,
       CASE WHEN b.kind = 'refresh' THEN 'refresh: ' || (b.parts->>'why')
            ELSE 'new: ' || b.policy || ' priority ' || round(b.priority, 4)
                 || coalesce(' (query impact ' || round((b.parts->>'query_impact')::DOUBLE, 4) || ')', '')
                 || coalesce(', expected impact ' || round((b.parts->>'expected_impact')::DOUBLE, 4)
                             || coalesce(' x calibration ' || round((b.parts->>'impact_calibration')::DOUBLE, 4), ''),
                             '') END AS why,
       (b.parts->>'query_impact')::DOUBLE AS query_impact,
       (b.parts->>'query_part')::DOUBLE AS query_part,
       (b.parts->>'prestige_impact')::DOUBLE AS prestige_impact,
       (b.parts->>'prestige_part')::DOUBLE AS prestige_part,
       (b.parts->>'discovery_part')::DOUBLE AS discovery_part,
       (b.parts->'mix'->>'query')::DOUBLE AS query_weight,
       (b.parts->'mix'->>'prestige')::DOUBLE AS prestige_weight,
       (b.parts->'mix'->>'discovery')::DOUBLE AS discovery_weight,
       CAST(b.parts->'needy_queries' AS VARCHAR[]) AS needy_queries,
       CAST(b.parts->'needy_odds' AS DOUBLE[]) AS needy_odds,
       (b.parts->>'expected_impact')::DOUBLE AS expected_impact,
       (b.parts->>'impact_calibration')::DOUBLE AS impact_calibration,
       (b.parts->>'p_changed')::DOUBLE AS p_changed,
       (b.parts->>'change_rate')::DOUBLE AS change_rate,
       b.parts->>'pooling' AS rate_pooling,
       (b.parts->>'by_sitemap')::BOOLEAN AS by_sitemap,
       (b.parts->>'sibling_checks')::INTEGER AS sibling_checks,
       (b.parts->>'sibling_changes')::INTEGER AS sibling_changes,
       (b.parts->>'carried_impact')::DOUBLE AS carried_impact,
       (b.parts->>'moving_share')::DOUBLE AS moving_share,
       f.in_links, f.pagerank, b.parts
FROM batches b
JOIN frontier f USING (url)
ORDER BY b.fetch_cycle, b.rank;

-- How fresh is each stored page likely to be when the next cycle fetches: when it was last fetched or checked and last
-- found changed, its checks and the changes they found, its estimated change rate per cycle (Cho & Garcia-Molina's
-- estimator, pooled over its path group and host while it has few checks: `pooling` names the level that weighs
-- most), the host's checks since its own and the changes they found, the host's change events and the page's own
-- changes no other page shared, P(changed since its last fetch) by the change model in use with its basis in words
-- (or from its sitemap's lastmod once its host's sitemap has proved it: by_sitemap) and by each model, and from which
-- cycle the refresh policy would fetch it again and why
-- (page_freshness in functions.sql, with the refresh settings of the latest cycle's record).
CREATE OR REPLACE VIEW v_page_freshness AS
SELECT url, host, checked_cycle AS last_fetched, changed_cycle AS last_changed, checks, changes, change_rate, pooling,
       sibling_checks, sibling_changes, host_events, solo_changes, p_changed, p_poisson, p_bursts, basis, by_sitemap,
       next_due, overdue, due_rule AS why
FROM page_freshness((SELECT coalesce(max(cycle), 0) + 1 FROM cycles),
                    (SELECT settings->'values' FROM cycles WHERE settings IS NOT NULL ORDER BY cycle DESC LIMIT 1))
ORDER BY p_changed DESC, url;

-- Which hosts' sitemaps have proved their lastmod dates (sitemap_hosts in functions.sql, with the refresh settings of
-- the latest cycle's record): the checks that judged them, agreed with them and found a change they told; a trusted
-- sitemap's lastmod decides P(changed) of its host's pages (v_page_freshness.by_sitemap).
CREATE OR REPLACE VIEW v_sitemap_trust AS
SELECT host, judged, agreed, told, round(agreed / judged, 4) AS agreed_share, trusted
FROM sitemap_hosts((SELECT coalesce(max(cycle), 0) + 1 FROM cycles),
                   (SELECT settings->'values' FROM cycles WHERE settings IS NOT NULL ORDER BY cycle DESC LIMIT 1))
ORDER BY host;

-- Path groups (url_path_group: origin, first directory, extension) held out of the batches: their URLs answered only
-- 4xx, path_refusals times or more; one of them is tried again in cycle next_try_cycle.
CREATE OR REPLACE VIEW v_paths_held AS
SELECT y.path_group, y.refused_total AS refusals, y.held_tries, y.cycle AS last_tried_cycle, y.next_try_cycle,
       (SELECT count(*) FROM v_frontier_open f WHERE url_path_group(f.url) = y.path_group) AS waiting_urls
FROM path_yield y
QUALIFY row_number() OVER (PARTITION BY y.path_group ORDER BY y.cycle DESC) = 1 AND y.next_try_cycle IS NOT NULL
ORDER BY waiting_urls DESC, y.path_group;

-- Which fetched pages are duplicates, of which page, and why: an exact copy (the same content hash as its original),
-- a near copy (SimHash within 3 bits), or folded into the page of its host it names as its canonical (in cycle
-- folded_cycle). A duplicate is not indexed and not a result; its out-links count as any page's.
CREATE OR REPLACE VIEW v_duplicates AS
SELECT d.url, d.duplicate_of,
       CASE WHEN d.folded_cycle IS NOT NULL THEN 'canonical'
            WHEN d.content_hash = o.content_hash THEN 'exact' ELSE 'near' END AS kind,
       d.cycle, d.folded_cycle
FROM pages d LEFT JOIN pages o ON o.url = d.duplicate_of
WHERE d.duplicate_of IS NOT NULL
ORDER BY d.duplicate_of, d.url;

-- What became of the canonical URL a page names when it names another (docs/explanation/canonicalization.md):
-- folded (the page is its duplicate), or why not: the page is a duplicate already (page_is_duplicate), the URL is
-- another host's (other_host: recorded, not followed), the page it names names yet another (chain), is not one the
-- ranker would index (target_not_indexable), is not a page: its frontier state (target_unfetched, target_gone,
-- target_redirected_permanent, ...) or why the crawl scope refused it (refused_<reason>).
CREATE OR REPLACE VIEW v_canonicals AS
SELECT p.url, p.canonical_link, p.cycle,
       CASE WHEN p.folded_cycle IS NOT NULL THEN 'folded'
            WHEN p.duplicate_of IS NOT NULL THEN 'page_is_duplicate'
            WHEN regexp_extract(p.canonical_link, '^[a-z][a-z0-9+.-]*://([^/?#:]+|\[[^\]]*\])', 1) <> p.host
                THEN 'other_host'
            WHEN t.url IS NULL THEN coalesce('target_' || f.status, 'refused_' || r.reason, 'target_unknown')
            WHEN coalesce(t.canonical_link, t.url) <> t.url THEN 'chain'
            ELSE 'target_not_indexable' END AS outcome,
       p.folded_cycle
FROM pages p
LEFT JOIN pages t ON t.url = p.canonical_link
LEFT JOIN frontier f ON f.url = p.canonical_link
LEFT JOIN (SELECT src, url, min(reason) AS reason FROM url_rejects GROUP BY src, url) r
    ON r.src = p.url AND r.url = p.canonical_link
WHERE p.canonical_link <> p.url
ORDER BY p.url;

-- How much each batch of a simulated crawl left to win, per judge (batch_regret, written by the simulator): the true
-- impact of the new URLs it took, of the best batch of as many from the same frontier and from every page not fetched
-- yet; choice efficiency (chosen ÷ best from the frontier: did the policy pick the right URLs among those it knew?) and
-- discovery (best from the frontier ÷ best from all: were the URLs that matter known at all?), so that chosen ÷ best
-- from all is their product; and the better URLs it passed over, best first, with the policy's priority, their place
-- in its order and the parts of their priority (what it believed of them).
CREATE OR REPLACE VIEW v_batch_regret AS
SELECT r.fetch_cycle AS cycle, r.judge, r.slots, r.chosen, r.best_frontier, r.best_all,
       r.chosen / nullif(r.best_frontier, 0) AS choice_efficiency,
       r.best_frontier / nullif(r.best_all, 0) AS discovery,
       (SELECT list({'url': p.url, 'impact': p.impact, 'priority': p.priority, 'frontier_rank': p.frontier_rank,
                     'parts': p.parts} ORDER BY p.impact DESC, p.url)
        FROM batch_passed_over p WHERE p.fetch_cycle = r.fetch_cycle AND p.judge = r.judge) AS passed_over
FROM batch_regret r
ORDER BY r.judge, r.fetch_cycle;
