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
INSERT INTO links SELECT src, dst, anchor, context, nofollow, $cycle FROM s_links ON CONFLICT DO NOTHING;
-- New URLs enter in discovery order, at most $max_urls_per_host per host.
INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source)
WITH cand AS (
    SELECT url, any_value(host) AS host, min(seq) AS seq, arg_min(source, seq) AS source FROM s_new GROUP BY url
), fresh AS (
    SELECT c.* FROM cand c ANTI JOIN frontier f ON f.url = c.url
), counted AS (
    SELECT fr.*, row_number() OVER (PARTITION BY fr.host ORDER BY fr.seq) + coalesce(h.n, 0) AS host_n
    FROM fresh fr LEFT JOIN (SELECT host, count(*) AS n FROM frontier GROUP BY host) h USING (host)
)
SELECT url, host, $cycle, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + row_number() OVER (ORDER BY seq),
       source
FROM counted WHERE host_n <= $max_urls_per_host;
