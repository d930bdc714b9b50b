-- Stage the shards' parse output for merge_parse as temp tables s_pages, s_links, s_found_links, s_redirects and
-- s_rejects (discovered_urls makes s_new of them), from the files listed by $pages, $links and $rejects (see
-- stage_fetch_files), the staged fetch output, and s_duplicates: duplicate_of and exact_copy of each 2xx page by its
-- place, as mark_stored_duplicates set them.
-- inputs: s_duplicates, s_fetch_log, s_sitemap_urls
CREATE OR REPLACE TEMP TABLE s_pages AS
SELECT p.url, p.status, p.content_type, p.title, p.text, p.description, p.date, p.lang, p.content_hash, p.simhash,
       d.duplicate_of, p.n_links, p.noindex, p.canonical_link, p.reason, p.bytes, host_of(p.url) AS host, d.exact_copy,
       p.etag, p.last_modified, p.payload_digest, p.fetched_at
FROM shard_rows($pages) p JOIN s_duplicates d USING (file_index, row_index)
ORDER BY file_index, row_index;
CREATE OR REPLACE TEMP TABLE s_redirects AS
SELECT url, final_url, file_index, row_index
FROM s_fetch_log
WHERE url_redirected(outcome) AND final_url IS NOT NULL;
-- The links found: the pages' own but those of an exact copy of a stored page (merged before), then a link from
-- every redirected URL to its target (empty anchor); seq keeps that order.
CREATE OR REPLACE TEMP TABLE s_found_links AS
SELECT src, dst, anchor, context, nofollow, row_number() OVER (ORDER BY part, file_index, row_index) AS seq
FROM (
    SELECT l.src, l.dst, l.anchor, l.context, l.nofollow, 1 AS part, l.file_index, l.row_index
    FROM shard_rows($links) l ANTI JOIN (SELECT url FROM s_pages WHERE exact_copy) c ON c.url = l.src
    UNION ALL
    SELECT url, final_url, '', 'redirect', false, 2, file_index, row_index FROM s_redirects
);
CREATE OR REPLACE TEMP TABLE s_links AS
SELECT src, dst, anchor, context, nofollow
FROM s_found_links
QUALIFY row_number() OVER (PARTITION BY src, dst, anchor ORDER BY seq) = 1
ORDER BY seq;
-- Links refused by the parse, then URLs refused by sitemaps.
CREATE OR REPLACE TEMP TABLE s_rejects AS
SELECT src, raw, reason
FROM (
    SELECT src, raw, reason, 1 AS part, file_index, row_index FROM shard_rows($rejects)
    UNION ALL
    SELECT sitemap, url, reason, 2, file_index, row_index FROM s_sitemap_urls WHERE reason IS NOT NULL
)
ORDER BY part, file_index, row_index;
