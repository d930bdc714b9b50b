-- Merge the shards' parse output of cycle $cycle (staged as s_pages, s_links, s_new).
INSERT INTO pages
SELECT url, host, $cycle, status, content_type, title, text, description, lang, content_hash, simhash,
       duplicate_of, n_links, noindex, reason, bytes
FROM s_pages
ON CONFLICT DO NOTHING;
-- A page reached through a same-host redirect is stored under its final URL: give it a frontier row.
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source, status, status_cycle)
SELECT p.url, p.host, $cycle, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY p.url),
       'redirect', 'fetched', $cycle
FROM s_pages p ANTI JOIN frontier f ON f.url = p.url;
-- A redirect target that was already waiting in the frontier has now been fetched through the redirect.
UPDATE frontier SET status = 'fetched', status_cycle = $cycle
WHERE status IN ('unfetched', 'retry_pending', 'deferred') AND url IN (SELECT url FROM s_pages);
-- New URLs enter in discovery order, at most $max_urls_per_host per host; the rest are recorded as rejects.
CREATE OR REPLACE TEMP TABLE s_counted AS
WITH cand AS (
    SELECT url, any_value(host) AS host, min(seq) AS seq, arg_min(source, seq) AS source,
           arg_min(src, seq) AS src
    FROM s_new GROUP BY url
), fresh AS (
    SELECT c.* FROM cand c ANTI JOIN frontier f ON f.url = c.url
)
SELECT fr.*, row_number() OVER (PARTITION BY fr.host ORDER BY fr.seq) + coalesce(h.n, 0) AS host_n
FROM fresh fr LEFT JOIN (SELECT host, count(*) AS n FROM frontier GROUP BY host) h USING (host);
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source)
SELECT url, host, $cycle, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY seq),
       source
FROM s_counted WHERE host_n <= $max_urls_per_host;
INSERT INTO url_rejects SELECT $cycle, src, url, 'host_cap' FROM s_counted WHERE host_n > $max_urls_per_host;
-- The link graph stays closed: links are kept between known URLs only.
INSERT INTO links
SELECT l.src, l.dst, l.anchor, l.context, l.nofollow, $cycle FROM s_links l SEMI JOIN frontier f ON f.url = l.dst
ON CONFLICT DO NOTHING;
INSERT INTO url_rejects SELECT $cycle, src, raw, reason FROM s_rejects;
-- A fetched page whose content repeats an earlier page is a duplicate, not a new crawled page.
UPDATE frontier SET status = 'duplicate', status_cycle = $cycle
WHERE url IN (SELECT url FROM s_pages WHERE duplicate_of IS NOT NULL);
DROP TABLE s_counted;
