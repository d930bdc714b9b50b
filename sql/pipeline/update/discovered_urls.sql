-- s_new: the URLs a cycle discovered, in discovery order (which URL of a host the frontier keeps first): followed
-- links in the order of s_found_links (seq), redirect targets, the canonical URLs pages name on their own host (by
-- URL; another host's is only recorded, in pages.canonical_link), then the URLs sitemaps list. host_of runs once per
-- URL: most are found many times.
-- inputs: s_found_links, s_pages, s_redirects, s_sitemap_urls
CREATE OR REPLACE TEMP TABLE s_new AS
WITH found AS MATERIALIZED (
    SELECT src, dst AS url, 'link' AS source, 1 AS part, 0 AS file_index, seq AS row_index
    FROM s_found_links WHERE NOT nofollow
    UNION ALL
    SELECT url, final_url, 'redirect', 2, file_index, row_index FROM s_redirects
    UNION ALL
    SELECT url, canonical_link, 'canonical', 3, 0, row_number() OVER (ORDER BY url) FROM s_pages
    WHERE canonical_link <> url AND host_of(canonical_link) = host
    UNION ALL
    SELECT sitemap, url, 'sitemap', 4, file_index, row_index FROM s_sitemap_urls WHERE reason IS NULL
), hosts AS (
    SELECT url, host_of(url) AS host FROM (SELECT DISTINCT url FROM found)
)
SELECT row_number() OVER (ORDER BY part, file_index, row_index) - 1 AS seq, src, url, source, host
FROM found LEFT JOIN hosts USING (url);
