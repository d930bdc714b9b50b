-- Batch slots for URLs that can be fetched: what became of each origin every cycle (its reachability, with
-- back-off across cycles), the origins probed outside the batch, the crawl scope's hop count, and each cycle's waste.

-- One row per origin (scheme://host[:port]) the fetch of a cycle tried: for a probe (its robots.txt, fetched as a
-- prerequisite outside the batch) or for batch URLs. The row carries the decision taken on it, so the latest row
-- of an origin is its state (v_origins).
CREATE TABLE origin_tries (
    cycle           INTEGER NOT NULL,
    origin          VARCHAR NOT NULL,
    host            VARCHAR NOT NULL,
    probe           BOOLEAN NOT NULL,       -- tried only for its robots.txt
    tried_at        DOUBLE,                 -- when its last request of the cycle ended (epoch seconds)
    error_class     VARCHAR,                -- NULL: it answered; else why not (dns, connection, tls, timeout, ...)
    failures        INTEGER NOT NULL,       -- consecutive failed tries, this one included (0: answered)
    state           VARCHAR NOT NULL,       -- ok | backoff | parked
    next_try_cycle  INTEGER,                -- backoff / parked: the cycle whose fetch probes it again
    PRIMARY KEY (cycle, origin)
);

-- Origins contacted before this migration: robots.txt that answered below 500 counts as a try that answered, one
-- that did not as a failure due at once.
INSERT INTO origin_tries
SELECT coalesce(updated_cycle, 0), origin, host, false, fetched_at,
       CASE WHEN status IS NULL THEN 'connection' WHEN status >= 500 THEN 'robots_server_error' END,
       CASE WHEN status IS NULL OR status >= 500 THEN 1 ELSE 0 END,
       CASE WHEN status IS NULL OR status >= 500 THEN 'backoff' ELSE 'ok' END,
       CASE WHEN status IS NULL OR status >= 500 THEN coalesce(updated_cycle, 0) + 1 END
FROM robots;

-- Origins whose robots.txt the fetch of cycle `cycle` fetches before any of their URLs may take a batch slot:
-- never contacted, or due after a back-off; chosen by the priority of their best frontier URL.
CREATE TABLE probes (
    cycle          INTEGER NOT NULL,
    origin         VARCHAR NOT NULL,
    host           VARCHAR NOT NULL,
    reason         VARCHAR NOT NULL,        -- new | backoff | parked
    best_url       VARCHAR NOT NULL,
    best_priority  DOUBLE NOT NULL,
    PRIMARY KEY (cycle, origin)
);

-- What the batch URLs of each path group (url_path_group: origin, first directory, extension) gave in each cycle, and
-- the decision taken on it: a group whose URLs answered 4xx at least $path_refusals times and never with a page is held
-- out of the batches, one of its URLs tried again when its back-off ends (the latest row of a group is its state).
CREATE TABLE path_yield (
    cycle           INTEGER NOT NULL,
    path_group      VARCHAR NOT NULL,
    answered        INTEGER NOT NULL,       -- batch URLs that got an HTTP answer
    pages           INTEGER NOT NULL,       -- of those, 2xx (a page)
    refused         INTEGER NOT NULL,       -- of those, 4xx but 429
    refused_total   INTEGER,                -- 4xx answers of the group so far; NULL once it gave a page
    held_tries      INTEGER NOT NULL,       -- cycles tried while held (0: not held)
    next_try_cycle  INTEGER,                -- held: the cycle whose batch may hold one of its URLs again
    PRIMARY KEY (cycle, path_group)
);

-- The errors in a row a host carried into the cycle that last updated it: a replay of that cycle starts from there
-- again instead of counting its own errors twice.
ALTER TABLE hosts ADD COLUMN errors_before INTEGER;

-- Links followed from the nearest seed (seeds 0; a redirect target as its source; a sitemap entry one more than its
-- host's nearest URL). NULL: admitted before this column existed.
ALTER TABLE frontier ADD COLUMN hops INTEGER;
UPDATE frontier SET hops = 0 WHERE source = 'seed';

-- What each cycle's batch slots gave (README, "Waste").
ALTER TABLE cycles ADD COLUMN slots_fetched INTEGER;      -- batch URLs that gave a page (2xx)
ALTER TABLE cycles ADD COLUMN slots_failed JSON;          -- tried without a page, by class
ALTER TABLE cycles ADD COLUMN slots_skipped JSON;         -- not tried, by reason
ALTER TABLE cycles ADD COLUMN slots_unanswered INTEGER;   -- batch URLs of origins that did not answer in the cycle
ALTER TABLE cycles ADD COLUMN waste_share DOUBLE;         -- share of the batch's slots that gave no page
ALTER TABLE cycles ADD COLUMN probes INTEGER;             -- origins probed outside the batch
ALTER TABLE cycles ADD COLUMN untested_slots INTEGER;     -- slots the batch it chose allowed origins that gave no page yet
