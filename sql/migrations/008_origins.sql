-- robots.txt is scoped to its origin (RFC 9309: scheme, host and port); politeness stays per host name.
-- Robots state moves from hosts to a table of its own. Rows cached under a host name are not carried over:
-- which origin they came from is unknown, and each origin's robots.txt is fetched again on its next visit.
CREATE TABLE robots (
    origin         VARCHAR PRIMARY KEY,     -- scheme://host[:port], as in canonical URLs
    host           VARCHAR NOT NULL,
    status         INTEGER,                 -- HTTP status of the last hop; NULL = unreachable
    fetched_at     DOUBLE,
    robots_txt     VARCHAR,
    crawl_delay    DOUBLE,
    sitemaps       VARCHAR[],
    updated_cycle  INTEGER
);
ALTER TABLE hosts DROP COLUMN robots_status;
ALTER TABLE hosts DROP COLUMN robots_fetched_at;
ALTER TABLE hosts DROP COLUMN robots_txt;
ALTER TABLE hosts DROP COLUMN sitemaps;
-- When the last request to the host ended: the next one, in a later cycle or a retried task, waits the delay
-- in force from here.
ALTER TABLE hosts ADD COLUMN last_request_at DOUBLE;
-- Whether a request opened a connection (false: it reused a kept-alive one).
ALTER TABLE fetch_requests ADD COLUMN new_connection BOOLEAN;
-- Every sitemap fetched (robots.txt Sitemap lines, or /sitemap.xml), what it held and why it was not read.
CREATE TABLE sitemap_fetches (
    cycle       INTEGER NOT NULL,
    url         VARCHAR NOT NULL,
    host        VARCHAR NOT NULL,
    depth       INTEGER NOT NULL,           -- 0 = named by robots.txt (or the fallback); n = n indexes down
    status      INTEGER,
    kind        VARCHAR,                    -- urlset | sitemapindex | text
    entries     INTEGER NOT NULL,           -- <loc> entries read
    admitted    INTEGER NOT NULL,           -- URLs handed to the frontier (before its own checks)
    reason      VARCHAR,                    -- why it was not read whole; NULL = read whole
    PRIMARY KEY (cycle, url)
);
