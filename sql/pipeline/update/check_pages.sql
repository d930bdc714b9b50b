-- The checks of cycle $cycle: each refresh of its batch (a stored page fetched again, s_fetch_log.refresh) against the
-- stored copy, by the outcome table of crawlcycle.contracts.url_states (check_outcome). A 304, a 2xx whose payload is
-- the stored copy's (the fetch wrote a revisit record: no page was parsed) or whose main-text signature
-- (content_hash) is the stored one found the page unchanged; another signature changed; a page gone or now
-- redirecting leaves pages; a fetch without an answer failed and leaves the stored copy as it was. Each check is a
-- row of page_checks. The page rows the checks change or remove, and the out-links of the pages they found changed,
-- gone or moved, are kept in replaced_pages and replaced_links as they were (a re-run of the cycle puts them back); a
-- changed page's new row and links are merged after, as a new page's are (merge_parse).
-- inputs: s_fetch_log, s_pages
CREATE OR REPLACE TEMP TABLE s_checks AS
SELECT l.url, p.host, l.status, l.etag, l.last_modified, n.payload_digest, n.fetched_at,
       check_outcome(l.outcome, CASE WHEN l.payload_digest = p.payload_digest THEN true
                                     WHEN n.url IS NOT NULL THEN n.content_hash IS NOT DISTINCT FROM p.content_hash
                                END) AS outcome,
       coalesce(p.checked_cycle, p.cycle) AS previous_cycle,
       CASE WHEN l.payload_digest = p.payload_digest THEN 0 ELSE bit_count(xor(n.simhash, p.simhash)) END
           AS simhash_bits
FROM s_fetch_log l
JOIN pages p USING (url)
LEFT JOIN s_pages n ON n.url = l.url
WHERE l.refresh;
-- sitemap_lastmod: the latest lastmod the page's sitemaps gave up to this cycle's read, which follows the check in the
-- host's run: what the sitemap says of the interval the check covers (sitemap_trust in functions.sql judges it).
INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed, simhash_bits, sitemap_lastmod)
SELECT $cycle, c.url, c.host, c.outcome, c.status, c.previous_cycle, check_found_change(c.outcome), c.simhash_bits,
       m.lastmod
FROM s_checks c
LEFT JOIN (SELECT url, arg_max(lastmod, cycle) AS lastmod FROM sitemap_lastmods WHERE cycle <= $cycle GROUP BY url) m
    ON m.url = c.url
ORDER BY c.url;
INSERT INTO replaced_pages BY NAME
SELECT p.*, $cycle AS replaced_cycle
FROM pages p SEMI JOIN s_checks c ON c.url = p.url AND check_found_change(c.outcome) IS NOT NULL
ORDER BY p.url;
INSERT INTO replaced_links BY NAME
SELECT l.*, $cycle AS replaced_cycle
FROM links l SEMI JOIN s_checks c ON c.url = l.src AND check_found_change(c.outcome)
ORDER BY l.src, l.dst, l.anchor;
DELETE FROM links WHERE src IN (SELECT url FROM s_checks WHERE check_found_change(outcome));
DELETE FROM pages WHERE url IN (SELECT url FROM s_checks WHERE check_found_change(outcome));
-- Not modified or unchanged: checked now, with the answer's validators (a 304 need not repeat them: the stored ones
-- stand then); a 2xx written whole is the record a later revisit refers to.
UPDATE pages p SET
    checked_cycle = $cycle,
    etag = CASE WHEN c.outcome = check_not_modified() THEN coalesce(c.etag, p.etag) ELSE c.etag END,
    last_modified = CASE WHEN c.outcome = check_not_modified() THEN coalesce(c.last_modified, p.last_modified)
                         ELSE c.last_modified END,
    payload_digest = coalesce(c.payload_digest, p.payload_digest),
    fetched_at = coalesce(c.fetched_at, p.fetched_at)
FROM s_checks c
WHERE p.url = c.url AND NOT check_found_change(c.outcome);
