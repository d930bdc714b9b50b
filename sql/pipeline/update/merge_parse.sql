-- Merge the shards' parse output of cycle $cycle (staged as s_pages, s_links, s_new), after the checks of the stored
-- pages fetched again (check_pages: a changed page's stored row and links are gone by now).
-- inputs: s_fetch_log, s_links, s_new, s_pages, s_rejects
-- A page stored already (a refresh that found it unchanged, a redirect target fetched again) keeps its row.
INSERT INTO pages (url, host, cycle, status, content_type, title, text, description, lang, content_hash, simhash,
                   duplicate_of, n_links, noindex, reason, bytes, date, canonical_link, checked_cycle, changed_cycle,
                   etag, last_modified, payload_digest, fetched_at)
SELECT url, host, $cycle, status, content_type, title, text, description, lang, content_hash, simhash,
       duplicate_of, n_links, noindex, reason, bytes, CAST(date AS DATE), canonical_link, $cycle, $cycle,
       etag, last_modified, payload_digest, fetched_at
FROM s_pages
ON CONFLICT DO NOTHING;
-- A page reached through a same-host redirect is stored under its final URL: give it a frontier row, as many hops
-- from the seeds as the URL that redirected.
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source, status, status_cycle, hops)
SELECT p.url, p.host, $cycle, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY p.url),
       'redirect', state_fetched(), $cycle,
       (SELECT min(r.hops) FROM s_fetch_log l JOIN frontier r ON r.url = l.url WHERE l.final_url = p.url)
FROM s_pages p ANTI JOIN frontier f ON f.url = p.url;
-- A redirect target that was already waiting in the frontier has now been fetched through the redirect.
UPDATE frontier SET status = state_fetched(), status_cycle = $cycle
WHERE url_state_to_fetch(status) AND url IN (SELECT url FROM s_pages);
-- New URLs enter in discovery order with their hops from the nearest seed (a link one more than its page, a redirect
-- target as many as the URL that redirected, a canonical URL as many as the page naming it, a sitemap entry one more
-- than its host's nearest URL), when the crawl scope ($scope, see scope_reason) admits them and their host holds
-- fewer than $max_urls_per_host; the rest are recorded as rejects with the reason.
CREATE OR REPLACE TEMP TABLE s_counted AS
WITH found AS (
    SELECT n.url, n.host, n.seq, n.source, n.src,
           CASE n.source WHEN 'link' THEN s.hops + 1 WHEN 'sitemap' THEN h.hops + 1 ELSE s.hops END AS hops
    FROM s_new n
    LEFT JOIN frontier s ON s.url = n.src
    LEFT JOIN (SELECT host, min(hops) AS hops FROM frontier GROUP BY host) h ON h.host = n.host
), cand AS (
    SELECT url, any_value(host) AS host, min(seq) AS seq, arg_min(source, seq) AS source,
           arg_min(src, seq) AS src, min(hops) AS hops
    FROM found GROUP BY url
), fresh AS (
    SELECT c.*, scope_reason(c.url, c.host, c.hops, $scope) AS out_of_scope
    FROM cand c ANTI JOIN frontier f ON f.url = c.url
)
SELECT fr.*, CASE WHEN fr.out_of_scope IS NULL
                  THEN row_number() OVER (PARTITION BY fr.host, fr.out_of_scope IS NULL ORDER BY fr.seq)
                       + coalesce(h.n, 0) END AS host_n
FROM fresh fr LEFT JOIN (SELECT host, count(*) AS n FROM frontier GROUP BY host) h USING (host);
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source, hops)
SELECT url, host, $cycle, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY seq),
       source, hops
FROM s_counted WHERE out_of_scope IS NULL AND host_n <= $max_urls_per_host;
INSERT INTO url_rejects
SELECT $cycle, src, url, coalesce(out_of_scope, 'host_cap') FROM s_counted
WHERE out_of_scope IS NOT NULL OR host_n > $max_urls_per_host
ORDER BY seq;
-- The link graph stays closed: links are kept between known URLs only, each (src, dst, anchor) once (s_links is
-- distinct; of the stored links only those of the batch's pages can repeat one).
INSERT INTO links
SELECT l.src, l.dst, l.anchor, l.context, l.nofollow, $cycle
FROM s_links l
SEMI JOIN frontier f ON f.url = l.dst
ANTI JOIN (SELECT src, dst, anchor FROM links WHERE src IN (SELECT src FROM s_links)) k
    ON k.src = l.src AND k.dst = l.dst AND k.anchor = l.anchor;
INSERT INTO url_rejects SELECT $cycle, src, raw, reason FROM s_rejects;
-- Canonical folding: a page naming another page of its host as its canonical is a duplicate of it, once that page is
-- stored and stands for itself, as the ranker would index it (not a duplicate, not noindex, a title or main text)
-- and naming no other URL as its own canonical (a chain is not followed). A pair is decided by the cycle storing
-- the later of its pages: a page waits, a page of its own, until the one it names is fetched.
CREATE OR REPLACE TEMP TABLE s_folds AS
SELECT a.url, b.url AS canonical
FROM pages a JOIN pages b ON b.url = a.canonical_link
WHERE (a.cycle = $cycle OR b.cycle = $cycle) AND b.url <> a.url AND b.host = a.host AND a.duplicate_of IS NULL
  AND b.duplicate_of IS NULL AND NOT coalesce(b.noindex, false) AND (b.title IS NOT NULL OR b.text IS NOT NULL)
  AND coalesce(b.canonical_link, b.url) = b.url;
UPDATE pages SET duplicate_of = f.canonical, folded_cycle = $cycle FROM s_folds f WHERE pages.url = f.url;
-- A fetched page whose content repeats an earlier page, or folded into its canonical, is a duplicate, not a new
-- crawled page.
UPDATE frontier SET status = state_duplicate(), status_cycle = $cycle
WHERE url IN (SELECT url FROM s_pages WHERE duplicate_of IS NOT NULL UNION ALL SELECT url FROM s_folds);
DROP TABLE s_counted;
DROP TABLE s_folds;
