-- Functions the stages and the views share, kept in the database so that they can be used from the duckdb CLI too.

-- Sum and mean of a DOUBLE column to 1e-9, the same whatever order DuckDB's threads add the rows in: each value is
-- rounded to an integer count of nano-units and the integers are added, exactly. A plain float sum depends on that
-- order in its last bits, and a score or a fit fed by it would then differ between two runs of the same cycle.
-- Each value must stay below 9.2e9 in magnitude (a BIGINT of nano-units); their sum may not. The variable sum_offset
-- (setting perturb_seed; unset: 0) moves the rounding grid by less than one nano-unit: the same sums, other last
-- digits, to measure how far an order moves on such noise.
CREATE OR REPLACE MACRO exact_sum(x) AS sum(round(x * 1e9 + coalesce(getvariable('sum_offset'), 0))::BIGINT) / 1e9;
CREATE OR REPLACE MACRO exact_avg(x) AS exact_sum(x) / count(x);

-- A value's share of noise under setting perturb_seed (the variable perturb_seed; unset or 0: none): a number in
-- [-0.5, 0.5) drawn from the key and the seed. Hybrid's priorities and the queries' neediness are moved by 1e-9 of
-- themselves times it, so that the ties their order breaks by URL or query fall another way and values a last digit
-- apart may swap: how much of a crawl's figure is such luck.
CREATE OR REPLACE MACRO perturbation(key) AS
    CASE WHEN coalesce(getvariable('perturb_seed'), 0) = 0 THEN 0.0
         ELSE hash(key, getvariable('perturb_seed')) / 18446744073709551616.0 - 0.5 END;

-- scheme://host[:port] of a canonical URL (canonical URLs carry no user info and no default port): the scope of
-- one robots.txt and the unit of reachability (crawlcycle.fetch.robots.origin_of in Python).
CREATE OR REPLACE MACRO url_origin(url) AS regexp_extract(url, '^[a-z][a-z0-9+.-]*://[^/?#]+');

-- Why the crawl scope refuses URL `target` of host `target_host`, found `target_hops` links from the nearest seed, or
-- NULL when it is in scope. `rules` holds the scope settings (Settings.scope_rules): allowed_domains and
-- denied_domains (a domain covers its subdomains), url_include and url_exclude (RE2 patterns searched in the URL;
-- '' = none), max_hops (0 = no limit; NULL hops pass) and follow_external (whether hosts other than the seeds' may
-- enter). The parameters are not named like columns: a macro would put them in place of the subquery's columns.
CREATE OR REPLACE MACRO scope_reason(target, target_host, target_hops, rules) AS CASE
    WHEN list_bool_or(list_transform(rules.denied_domains,
                                     lambda d: target_host = d OR ends_with(target_host, '.' || d)))
        THEN 'domain_denied'
    WHEN len(rules.allowed_domains) > 0
         AND NOT list_bool_or(list_transform(rules.allowed_domains,
                                             lambda d: target_host = d OR ends_with(target_host, '.' || d)))
        THEN 'domain_not_allowed'
    WHEN NOT rules.follow_external AND target_host NOT IN (SELECT host FROM frontier WHERE source = 'seed')
        THEN 'external_host'
    WHEN rules.url_exclude <> '' AND regexp_matches(target, rules.url_exclude) THEN 'url_excluded'
    WHEN rules.url_include <> '' AND NOT regexp_matches(target, rules.url_include) THEN 'url_not_included'
    WHEN rules.max_hops > 0 AND target_hops > rules.max_hops THEN 'too_many_hops'
END;

-- The path group of a URL, the unit whose broken links are learned: its origin, its first directory (when the path
-- has more than one segment) and the extension of its last segment, e.g. http://h/purchase/* for
-- http://h/purchase/license and http://h/*.json for http://h/cluster.json?v=1.
CREATE OR REPLACE MACRO url_path_group(url) AS
    url_origin(url)
    || coalesce(nullif(regexp_extract(url, '^[a-z][a-z0-9+.-]*://[^/?#]+(/[^/?#]+/)', 1), ''), '/') || '*'
    || regexp_extract(regexp_extract(url, '^[^?#]*'), '/[^/]*(\.[A-Za-z0-9]{1,8})$', 1);

-- The prestige-based impact of a page (crawlcycle.models.prestige): the quadratic regression from its scaled PageRank
-- `pr` (1 = an average page) and its in-links `links` to observed impact, coefficients b0 .. b22, floored at 0.
CREATE OR REPLACE MACRO prestige_impact(pr, links, b0, b1, b2, b11, b12, b22) AS
    greatest(0, b0 + b1 * pr + b2 * links + b11 * pr * pr + b12 * pr * links + b22 * links * links);

-- BM25F, the reference ranker's score (crawlcycle.ranking.ranker): a field's part of a term's pseudo-frequency (field
-- weight w, term frequency tf, length normalisation b against the field's average length), the term's weight from
-- its pseudo-frequency among `pages` indexed pages of which `df` hold it, and a page's prestige prior.
CREATE OR REPLACE MACRO bm25f_tf(w, tf, b, length, avg_length) AS w * tf / (1 - b + b * length / avg_length);
CREATE OR REPLACE MACRO bm25_weight(pages, df, tf, k1) AS ln(1 + (pages - df + 0.5) / (df + 0.5)) * tf / (k1 + tf);
CREATE OR REPLACE MACRO prestige_prior(w, pagerank, known) AS w * ln(1 + coalesce(pagerank, 0) * known);
-- Per field of the index as it stands: the pages where it is not empty and its average length over all indexed pages.
CREATE OR REPLACE MACRO field_lengths() AS TABLE
SELECT field, count(*) AS docs, sum(length) / (SELECT count(*) FROM posting_docs) AS avg_length
FROM posting_lengths GROUP BY field;
-- Whether index run `run` wrote a page (posting_docs: its content fields in `content_cycle`, its anchor field in
-- `anchor_cycle`): within an index epoch, the pages whose scores moved.
CREATE OR REPLACE MACRO index_run_wrote(content_cycle, anchor_cycle, run) AS content_cycle = run OR anchor_cycle = run;
-- The fields that count (weight above 0) with their weight, b and average length: `names`, `weights` and `bs` side by
-- side (the settings bm25_weights and bm25_b); the length the index epoch holds, or with `today` the index's now.
CREATE OR REPLACE MACRO bm25f_fields(names, weights, bs, today) AS TABLE
SELECT p.field, p.weight, p.b, CASE WHEN today THEN c.avg_length ELSE s.avg_length END AS avg_length
FROM (SELECT unnest(names) AS field, unnest(weights) AS weight, unnest(bs) AS b) p
JOIN posting_fields s ON s.field = p.field
LEFT JOIN (SELECT * FROM field_lengths() WHERE today) c ON c.field = p.field
WHERE p.weight > 0;
-- N (indexed pages) of the idf and the known URLs of the prior: the open index epoch's, or with `today` the crawl's now.
CREATE OR REPLACE MACRO ranker_sizes(today) AS TABLE
SELECT CASE WHEN today THEN (SELECT count(*) FROM posting_docs)
            ELSE (SELECT pages FROM index_epochs WHERE closed_cycle IS NULL) END AS pages,
       CASE WHEN today THEN (SELECT count(*) FROM frontier)
            ELSE (SELECT known FROM index_epochs WHERE closed_cycle IS NULL) END AS known;

-- The weight of result rank `r` in a top `k`: users look at rank r with a likelihood of r^-1.5 (Pandey & Olston,
-- "User-centric Web crawling", 2005), scaled so that the k ranks average 1, the worth of one top-K slot: the impact
-- a page carries at rank r, in the units of a new page's expected impact.
CREATE OR REPLACE MACRO view_weight(r, k) AS
    CASE WHEN r <= k THEN k * pow(r, -1.5) / (SELECT sum(pow(i, -1.5)) FROM range(1, k + 1) t(i)) ELSE 0 END;

-- Each query of cycle `c`'s query-log partition with its frequency.
CREATE OR REPLACE MACRO cycle_query_frequencies(c) AS TABLE
SELECT l.query, exact_sum(l.frequency) AS frequency
FROM query_log l JOIN cycles y ON y.interval_start = l.partition
WHERE y.cycle = c
GROUP BY l.query;

-- The impact each page carries in the results of cycle `c`: the sum over the queries of the cycle's query-log
-- partition whose reference top `k` (query_results) holds it of the query's frequency x view_weight of its rank.
CREATE OR REPLACE MACRO carried_impact(c, k) AS TABLE
SELECT r.url, exact_sum(f.frequency * view_weight(r.rank, k)) AS carried_impact
FROM query_results r JOIN cycle_query_frequencies(c) f USING (query)
WHERE r.cycle = c AND r.rank <= k
GROUP BY r.url;

-- Cho & Garcia-Molina's estimator of a change rate per cycle (ACM TOIT 2003): of `n_checks` checks, `n_changed` found
-- the page changed, the checks `mean_gap` cycles apart on average; r = -ln((n - X + 0.5) / (n + 0.5)) changes per
-- check interval (nearly unbiased where X / n is not, and finite when every check found a change), per cycle.
CREATE OR REPLACE MACRO change_rate(n_checks, n_changed, mean_gap) AS
    -ln((n_checks - n_changed + 0.5) / (n_checks + 0.5)) / mean_gap;

-- When each fetch or check of a page began, by cycle (fetch_log.started_at; a page first fetched through a redirect:
-- the redirect's), on the hosts whose sitemaps give lastmod dates.
CREATE OR REPLACE MACRO sitemap_fetch_times(as_of) AS TABLE
SELECT coalesce(final_url, url) AS url, cycle, min(started_at) AS at
FROM fetch_log
WHERE cycle <= as_of AND started_at IS NOT NULL AND host IN (SELECT host FROM sitemap_lastmods)
GROUP BY ALL;

-- Whether each host's sitemap has proved its lastmod dates, as of the fetch of cycle `as_of` by the refresh settings
-- `conf` (Google uses lastmod only when it is "consistently and verifiably accurate"; changefreq is not read). A check
-- judges the lastmod its page's sitemap gave for the interval it covered (page_checks.sitemap_lastmod), when the host's
-- sitemaps were read in the check's cycle (after its batch URLs): after the fetch or check before it, the sitemap said
-- the page changed; at or before it, that it did not; after the check itself, it tells of a later change and judges
-- nothing. `judged` checks, `agreed` with what they found, `told` changes they found that the sitemap had told. Trusted
-- once at least lastmod_trust_checks checks agreed, at least lastmod_trust_share of those judged, and one change told
-- was found (dates that never move tell none). `agreement`: the chance the sitemap is right by the rule of succession,
-- (agreed + 1) / (judged + 2). Times are the crawler's, when the fetches began (sitemap_fetch_times).
CREATE OR REPLACE MACRO sitemap_hosts(as_of, conf) AS TABLE
WITH judged AS (
    SELECT c.host, c.changed, epoch(c.sitemap_lastmod) > before.at AS told_changed
    FROM page_checks c
    JOIN sitemap_fetch_times(as_of) before ON before.url = c.url AND before.cycle = c.previous_cycle
    JOIN sitemap_fetch_times(as_of) checked ON checked.url = c.url AND checked.cycle = c.cycle
    SEMI JOIN sitemap_fetches r ON r.cycle = c.cycle AND r.host = c.host AND r.kind = 'urlset'
    WHERE c.cycle <= as_of AND c.changed IS NOT NULL AND epoch(c.sitemap_lastmod) <= checked.at
), counted AS (
    SELECT host, count(*) AS judged, count(*) FILTER (WHERE told_changed = changed) AS agreed,
           count(*) FILTER (WHERE told_changed AND changed) AS told
    FROM judged GROUP BY host
)
SELECT *, (agreed + 1) / (judged + 2) AS agreement,
       agreed >= (conf->>'lastmod_trust_checks')::INTEGER AND agreed >= (conf->>'lastmod_trust_share')::DOUBLE * judged
       AND told > 0 AS trusted
FROM counted;

-- What the sitemap says of each stored page of a host whose sitemap is trusted (sitemap_hosts), with a lastmod:
-- `told_changed`, its latest lastmod is after the page's last fetch or check, and the host's `agreement`.
CREATE OR REPLACE MACRO sitemap_trust(as_of, conf) AS TABLE
SELECT p.url, h.agreement, epoch(m.lastmod) > f.at AS told_changed
FROM pages p
JOIN sitemap_hosts(as_of, conf) h ON h.host = p.host AND h.trusted
JOIN (SELECT url, arg_max(lastmod, cycle) AS lastmod FROM sitemap_lastmods WHERE cycle <= as_of GROUP BY url) m
    ON m.url = p.url
JOIN sitemap_fetch_times(as_of) f ON f.url = p.url AND f.cycle = coalesce(p.checked_cycle, p.cycle);

-- How fresh each stored page is likely to be as of the fetch of cycle `as_of`, by the refresh settings `conf` (JSON
-- of the [refresh] section: Settings.section('refresh'), or a cycle's record): the one home of the change-rate
-- estimate, which the refresh policies (sql/ordering/refresh/) and v_page_freshness read.
-- Rate: change_rate over the page's checks that told changed or not (page_checks up to `as_of`), pooled while the
-- page has few: each level's estimate is shrunk towards the one above it, as if it had refresh_prior_weight more
-- checks at that rate: page -> its path group (url_path_group) -> its host -> change_rate_prior. `pooling` names the
-- level that weighs most in the result. P(changed) since the last fetch or check, by change_model:
-- - poisson: the host's other pages checked since (their previous check at or after this page's: sibling_checks, of
--   which sibling_changes found a change) as evidence, with refresh_prior_weight checks' worth of the rate's
--   1 - exp(-rate x cycles since). One check that sees a release's change reads as a rate near one change per cycle,
--   for the page, its path group and its host, long after the release.
-- - bursts: sites change in bursts (a release rewrites many pages at once, then nothing changes for months). A host's
--   change events are the cycles whose checks found changes, each after the latest copy a changed check replaced
--   (`after`); a later detection is a new event only if its window (after, cycle] starts at or after the latest
--   event, else it is that event found again on a copy older than it. P = q x P(an event since the page's copy):
--   q, the share of the host's checks whose window spans an event that found a change (one half as
--   refresh_prior_weight checks before any); an event detected after the copy counts whole, one whose window
--   (after, cycle] straddles the copy by the share of the window after it; an event not detected yet by the host's
--   events per cycle (change_rate_prior as refresh_prior_weight cycles' worth) over the cycles since its latest
--   check. A page copied after the host's last
--   event is fresh until the checks see another. A page whose own changes no other page of its host shared
--   (`solo_changes`: news, changelogs) keeps its own rhythm: its own rate's 1 - exp(-rate x cycles since) weighs
--   solo_changes / (solo_changes + refresh_prior_weight), and from two such changes on its checks leave the host's
--   events to the other pages.
-- host_unseen: P(an event of the host since its latest check), what a check of any of its pages would tell.
-- p_poisson and p_bursts are both given; p_changed is change_model's (poisson for cycles recorded without it).
-- by_sitemap: the page's host has proved its sitemap's lastmod dates (sitemap_trust), so P(changed) is the sitemap's
-- word instead: its agreement if the latest lastmod is after the page's last fetch or check, 1 - agreement if not.
-- adaptive_interval: Nutch's AdaptiveFetchSchedule over the page's checks in order, from fixed_revisit_cycles: x (1 +
-- adaptive_inc_rate) after an unmodified check, x (1 - adaptive_dec_rate) after a modified one, kept within
-- min_revisit_cycles .. max_revisit_cycles. next_due: the cycle from which refresh_policy would fetch the page again
-- (fixed, adaptive: when its interval has passed; the others: min_revisit_cycles after the check, then by value or
-- budget), with the rule in words; overdue: max_revisit_cycles have passed (refreshed before any value).
CREATE OR REPLACE MACRO page_freshness(as_of, conf) AS TABLE
WITH RECURSIVE s AS (
    SELECT conf->>'refresh_policy' AS policy, coalesce(conf->>'change_model', 'poisson') AS model,
           (conf->>'change_rate_prior')::DOUBLE AS prior,
           (conf->>'refresh_prior_weight')::DOUBLE AS w, (conf->>'min_revisit_cycles')::INTEGER AS lo,
           (conf->>'max_revisit_cycles')::INTEGER AS hi, (conf->>'fixed_revisit_cycles')::INTEGER AS fixed,
           (conf->>'adaptive_inc_rate')::DOUBLE AS inc, (conf->>'adaptive_dec_rate')::DOUBLE AS dec
), seen AS (
    SELECT url, host, url_path_group(url) AS path_group, changed, cycle, previous_cycle, cycle - previous_cycle AS gap
    FROM page_checks
    WHERE changed IS NOT NULL AND cycle <= as_of
), by_since AS (
    SELECT host, previous_cycle, count(*) AS n, count(*) FILTER (WHERE changed) AS x FROM seen GROUP BY ALL
), solo AS (
    SELECT s.url, count(*) AS solo_changes
    FROM seen s
    JOIN (SELECT host, cycle FROM seen GROUP BY ALL HAVING count(*) FILTER (WHERE changed) = 1) c USING (host, cycle)
    WHERE s.changed GROUP BY 1
), bursty AS (  -- the checks of pages without a rhythm of their own (two solo changes) tell the host's events
    SELECT * FROM seen WHERE url NOT IN (SELECT url FROM solo WHERE solo_changes >= 2)
), detections AS (
    SELECT host, cycle, max(previous_cycle) FILTER (WHERE changed) AS after
    FROM bursty GROUP BY ALL HAVING count(*) FILTER (WHERE changed) > 0
), events(host, cycle, after) AS (  -- each detection whose window starts after the latest event: a new event
    SELECT host, min(cycle), arg_min(after, cycle) FROM detections GROUP BY host
    UNION ALL
    SELECT d.host, d.cycle, d.after
    FROM events e JOIN detections d ON d.host = e.host AND d.cycle > e.cycle AND d.after >= e.cycle
    QUALIFY row_number() OVER (PARTITION BY d.host ORDER BY d.cycle) = 1
), host_events AS (
    SELECT b.host, coalesce(any_value(e.events), 0) AS events, max(b.cycle) AS last_check,
           min(b.previous_cycle) AS first_copy
    FROM bursty b LEFT JOIN (SELECT host, count(*) AS events FROM events GROUP BY 1) e USING (host) GROUP BY 1
), event_share AS (  -- of the checks whose window spans an event, those that found the page changed
    SELECT s.host, count(*) AS n, count(*) FILTER (WHERE s.changed) AS x
    FROM bursty s SEMI JOIN events e ON e.host = s.host AND e.cycle > s.previous_cycle AND e.cycle <= s.cycle
    GROUP BY 1
), by_page AS (
    SELECT url, count(*) AS n, count(*) FILTER (WHERE changed) AS x, avg(gap) AS gap,
           list(changed ORDER BY cycle) AS history
    FROM seen GROUP BY url
), by_group AS (
    SELECT path_group, count(*) AS n, count(*) FILTER (WHERE changed) AS x, avg(gap) AS gap FROM seen GROUP BY 1
), by_host AS (
    SELECT host, count(*) AS n, count(*) FILTER (WHERE changed) AS x, avg(gap) AS gap FROM seen GROUP BY 1
), counted AS (
    SELECT p.url, p.host, url_path_group(p.url) AS path_group, coalesce(p.checked_cycle, p.cycle) AS checked_cycle,
           coalesce(p.changed_cycle, p.cycle) AS changed_cycle, coalesce(c.n, 0) AS checks,
           coalesce(c.x, 0) AS changes, coalesce(c.history, []) AS history,
           coalesce(g.n, 0) AS group_checks, coalesce(h.n, 0) AS host_checks,
           coalesce(c.n * change_rate(c.n, c.x, c.gap), 0) AS page_mass,
           coalesce(g.n * change_rate(g.n, g.x, g.gap), 0) AS group_mass,
           coalesce(h.n * change_rate(h.n, h.x, h.gap), 0) AS host_mass,
           (SELECT coalesce(sum(b.n), 0)::BIGINT FROM by_since b
            WHERE b.host = p.host AND b.previous_cycle >= coalesce(p.checked_cycle, p.cycle)) AS sibling_checks,
           (SELECT coalesce(sum(b.x), 0)::BIGINT FROM by_since b
            WHERE b.host = p.host AND b.previous_cycle >= coalesce(p.checked_cycle, p.cycle)) AS sibling_changes,
           coalesce((SELECT max(least(1, (e.cycle - coalesce(p.checked_cycle, p.cycle)) / (e.cycle - e.after)))
                     FROM events e WHERE e.host = p.host
                       AND e.cycle > coalesce(p.checked_cycle, p.cycle)), 0) AS event_detected,
           coalesce(change_rate(c.n, c.x, c.gap), 0) AS own_rate,
           coalesce(o.solo_changes, 0) AS solo_changes,
           coalesce(he.events, 0) AS host_events, as_of - coalesce(he.first_copy, as_of) AS host_span,
           as_of - greatest(coalesce(p.checked_cycle, p.cycle), coalesce(he.last_check, 0)) AS unseen,
           as_of - coalesce(he.last_check, p.checked_cycle, p.cycle) AS host_unseen_cycles,
           coalesce(es.n, 0) AS event_checks, coalesce(es.x, 0) AS event_changes
    FROM pages p
    LEFT JOIN by_page c ON c.url = p.url
    LEFT JOIN by_group g ON g.path_group = url_path_group(p.url)
    LEFT JOIN by_host h ON h.host = p.host
    LEFT JOIN solo o ON o.url = p.url
    LEFT JOIN host_events he ON he.host = p.host
    LEFT JOIN event_share es ON es.host = p.host
), pooled AS (
    SELECT k.*, s.*,
           (k.host_mass + s.w * s.prior) / (k.host_checks + s.w) AS host_rate,
           k.checks / (k.checks + s.w) AS page_share,
           k.group_checks / (k.group_checks + s.w) AS group_share,
           k.host_checks / (k.host_checks + s.w) AS host_share
    FROM counted k CROSS JOIN s
), rated AS (
    SELECT *,
           (page_mass + w * (group_mass + w * host_rate) / (group_checks + w)) / (checks + w) AS rate,
           as_of - checked_cycle AS since,
           list_reduce(history, lambda width, was_changed:
                       least(hi, greatest(lo, CASE WHEN was_changed THEN width * (1 - dec) ELSE width * (1 + inc) END)),
                       fixed::DOUBLE) AS adaptive_interval
    FROM pooled
), weighed AS (
    SELECT *, page_share AS w_page, (1 - page_share) * group_share AS w_group,
           (1 - page_share) * (1 - group_share) * host_share AS w_host,
           (1 - page_share) * (1 - group_share) * (1 - host_share) AS w_prior,
           (event_changes + w * 0.5) / (event_checks + w) AS event_share,
           (host_events + w * prior) / (host_span + w) AS event_rate,
           1 - (1 - event_detected) * exp(-(host_events + w * prior) / (host_span + w) * unseen) AS p_event,
           solo_changes / (solo_changes + w) AS w_own
    FROM rated
), estimated AS (
    SELECT *,
           (sibling_changes + w * (1 - exp(-rate * since))) / (sibling_checks + w) AS p_poisson,
           w_own * (1 - exp(-own_rate * since)) + (1 - w_own) * event_share * p_event AS p_bursts
    FROM weighed
)
SELECT url, host, path_group, checked_cycle, changed_cycle, since, checks, changes, sibling_checks, sibling_changes,
       round(rate, 12) AS change_rate,
       CASE WHEN w_page >= greatest(w_group, w_host, w_prior) THEN 'page'
            WHEN w_group >= greatest(w_host, w_prior) THEN 'path_group'
            WHEN w_host >= w_prior THEN 'host' ELSE 'prior' END AS pooling,
       round(CASE WHEN t.told_changed THEN t.agreement WHEN NOT t.told_changed THEN 1 - t.agreement
                  WHEN model = 'bursts' THEN p_bursts ELSE p_poisson END, 12) AS p_changed,
       round(p_poisson, 12) AS p_poisson, round(p_bursts, 12) AS p_bursts, host_events, solo_changes,
       round(event_share, 12) AS event_share, round(1 - exp(-event_rate * host_unseen_cycles), 12) AS host_unseen,
       t.url IS NOT NULL AS by_sitemap,
       CASE WHEN t.url IS NOT NULL THEN 'by its sitemap''s lastmod'
            WHEN model = 'poisson' THEN 'rate ' || round(rate, 4) || '/cycle by ' || pooling
            WHEN w_own >= 0.5 THEN 'its own rate ' || round(own_rate, 4) || '/cycle'
            ELSE 'P(a change event of its host since) ' || round(p_event, 4) || ' of ' || host_events || ' seen x '
                 || round(event_share, 4) || ' of pages an event changes' END AS basis,
       round(adaptive_interval, 9) AS adaptive_interval,
       CASE policy WHEN 'none' THEN NULL
                   WHEN 'fixed' THEN checked_cycle + fixed
                   WHEN 'adaptive' THEN checked_cycle + CAST(ceil(adaptive_interval) AS INTEGER)
                   ELSE checked_cycle + lo END AS next_due,
       since >= hi AS overdue,
       CASE policy WHEN 'none' THEN 'never fetched again (refresh_policy none)'
                   WHEN 'fixed' THEN 'every ' || fixed || ' cycles (fixed)'
                   WHEN 'adaptive' THEN 'every ' || round(adaptive_interval, 2) || ' cycles (adaptive, after ' || checks
                                        || ' checks, ' || changes || ' changed)'
                   ELSE 'a candidate ' || lo || ' cycles after its last check, taken by ' || policy
                        || '; before any other once ' || hi || ' cycles have passed' END AS due_rule
FROM estimated LEFT JOIN sitemap_trust(as_of, conf) t USING (url);
