-- Re-fetching stored pages. A page keeps the validators its server sent (ETag, Last-Modified) for the conditional
-- request of its next fetch, the payload digest and date of the WARC record holding it (a revisit record refers to
-- them), the cycle it was last fetched or checked, and the cycle whose fetch gave the text it holds; the fetch log
-- records the validators and payload digest of each answer. Every re-fetch of a stored page is a row of page_checks:
-- the change history the refresh policies learn from. The rows a check of cycle N changed or removed are kept in
-- replaced_pages and replaced_links as they were, so that a re-run of cycle N puts them back first and leaves the
-- tables as a clean run would.
ALTER TABLE pages ADD COLUMN etag VARCHAR;
ALTER TABLE pages ADD COLUMN last_modified VARCHAR;
ALTER TABLE pages ADD COLUMN checked_cycle INTEGER;   -- last cycle it was fetched or checked (a 304 or a 2xx)
ALTER TABLE pages ADD COLUMN changed_cycle INTEGER;   -- cycle whose fetch gave the text it holds
ALTER TABLE pages ADD COLUMN payload_digest VARCHAR;  -- WARC-Payload-Digest of the record holding it
ALTER TABLE pages ADD COLUMN fetched_at DOUBLE;       -- WARC-Date of that record, epoch seconds
UPDATE pages SET checked_cycle = cycle, changed_cycle = cycle;
-- Stored before the record date was kept: the start of the fetch that stored it, near enough.
UPDATE pages SET fetched_at = l.started_at
FROM (SELECT cycle, final_url, min(started_at) AS started_at FROM fetch_log GROUP BY ALL) l
WHERE l.cycle = pages.cycle AND l.final_url = pages.url;
ALTER TABLE fetch_log ADD COLUMN etag VARCHAR;            -- validators of a 2xx or 304 answer, as sent
ALTER TABLE fetch_log ADD COLUMN last_modified VARCHAR;
ALTER TABLE fetch_log ADD COLUMN payload_digest VARCHAR;  -- of a 2xx body

CREATE TABLE page_checks (
    cycle            INTEGER NOT NULL,
    url              VARCHAR NOT NULL,
    host             VARCHAR NOT NULL,
    outcome          VARCHAR NOT NULL,   -- crawlcycle.contracts.url_states.CheckOutcome
    status           INTEGER,
    previous_cycle   INTEGER NOT NULL,   -- the page's checked_cycle before this check
    changed          BOOLEAN,            -- main text changed since that check (NULL: not known, a failure)
    simhash_bits     INTEGER,            -- SimHash distance of the new main text to the stored one
    sitemap_lastmod  TIMESTAMP,          -- lastmod its sitemap gave before this check, if any
    PRIMARY KEY (cycle, url)
);

CREATE TABLE replaced_pages AS SELECT *, 0 AS replaced_cycle FROM pages WITH NO DATA;
CREATE TABLE replaced_links AS SELECT *, 0 AS replaced_cycle FROM links WITH NO DATA;

ALTER TABLE batches ADD COLUMN kind VARCHAR DEFAULT 'new';   -- new | refresh (a stored page fetched again)
UPDATE batches SET kind = 'new';
