-- The batch of cycle $cycle in rank order (crawlcycle.contracts.shard_files.URLS_SCHEMA), each refresh with what its
-- stored copy was fetched with: as it stood before the cycle's checks, which a replay of the cycle finds done (the
-- row is then in replaced_pages, the first that the checks of this cycle or a later one replaced).
WITH before AS (
    SELECT url, etag, last_modified, payload_digest, fetched_at
    FROM replaced_pages WHERE replaced_cycle >= $cycle
    QUALIFY row_number() OVER (PARTITION BY url ORDER BY replaced_cycle) = 1
), copies AS (
    SELECT * FROM before
    UNION ALL
    SELECT url, etag, last_modified, payload_digest, fetched_at FROM pages ANTI JOIN before USING (url)
)
SELECT b.url, b.host, b.rank, b.kind, c.etag, c.last_modified, c.payload_digest, c.fetched_at
FROM batches b LEFT JOIN copies c ON c.url = b.url AND b.kind = 'refresh'
WHERE b.fetch_cycle = $cycle
ORDER BY b.rank;
