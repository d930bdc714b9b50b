-- Sitemaps' lastmod dates. Each URL's lastmod is kept as its sitemaps gave it, a row when a cycle's read gives a value
-- the URL did not have before (its latest is the row of the highest cycle), so that a re-run of the cycle removes
-- what it read and the one before stands again. page_checks.sitemap_lastmod holds the latest up to the read of the
-- check's own cycle (a host's sitemaps are read after its batch URLs: what the sitemap says of the interval the check
-- covered); the checks of a host's pages prove whether its dates can be trusted (sitemap_hosts in
-- sql/views/functions.sql). The lastmod values of a file in no W3C Datetime form are counted.
CREATE TABLE sitemap_lastmods (
    cycle    INTEGER NOT NULL,     -- the cycle whose sitemap read first gave this lastmod
    url      VARCHAR NOT NULL,     -- canonical, as admitted to the frontier
    host     VARCHAR NOT NULL,
    lastmod  TIMESTAMP NOT NULL,   -- UTC
    PRIMARY KEY (cycle, url)
);
ALTER TABLE sitemap_fetches ADD COLUMN bad_lastmods INTEGER;   -- <lastmod> values of pages in no W3C Datetime form
