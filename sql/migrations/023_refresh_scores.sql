-- Refreshes: the fetched pages the refresh policy of cycle N would fetch again in the batch of cycle N + 1, each with
-- its value and why (written by the score stage, crawlcycle.ordering.refresh; materialize divides the batch between
-- them and the new URLs), and the cycle figures of refreshing.
CREATE TABLE refresh_scores (
    score_cycle  INTEGER NOT NULL,   -- the cycle whose score stage wrote it
    url          VARCHAR NOT NULL,
    host         VARCHAR NOT NULL,
    policy       VARCHAR NOT NULL,   -- the refresh policy (crawlcycle.contracts.refresh_policies)
    value        DOUBLE NOT NULL,    -- the policy's order: a higher value is refreshed sooner
    first        BOOLEAN NOT NULL,   -- refreshed before any value: due (fixed, adaptive) or past max_revisit_cycles
    parts        JSON,               -- what the value is made of, and why
    PRIMARY KEY (score_cycle, url)
);

ALTER TABLE cycles ADD COLUMN refreshes INTEGER;             -- refresh URLs in the cycle's batch
ALTER TABLE cycles ADD COLUMN checks_not_modified INTEGER;   -- checks answered 304 Not Modified
ALTER TABLE cycles ADD COLUMN checks_changed INTEGER;        -- checks that found the main text changed
ALTER TABLE cycles ADD COLUMN checks_gone INTEGER;           -- checks after which the page left the index
ALTER TABLE cycles ADD COLUMN est_freshness DOUBLE;          -- mean P(unchanged since the last check) over indexed pages
ALTER TABLE cycles ADD COLUMN next_refresh_share DOUBLE;     -- share of refreshes in the batch the cycle chose
