-- URLs refused on the way into the frontier, with the reason (bad scheme, binary file, spider-trap
-- guards, per-host cap, ...): nothing is dropped silently.
CREATE TABLE url_rejects (
    cycle   INTEGER NOT NULL,
    src     VARCHAR,            -- page the link was found on
    url     VARCHAR NOT NULL,   -- the URL as found (raw) or as canonicalized (host_cap)
    reason  VARCHAR NOT NULL
);
