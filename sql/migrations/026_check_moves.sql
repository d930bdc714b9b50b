-- The counterfactual of each check that found its page changed: the replaced copy ranked in place of the new one in
-- the index of the check's cycle, over the queries of the cycle's query-log partition whose reference top K held the
-- page before the check or holds it after (crawlcycle.ordering.refresh.record_moves). What it moves in or out of a
-- top K is the page's own change, not the crawl's growth around it: the moving share of the refresh policy impact
-- (sql/ordering/refresh/moving_share.sql) is learnt from these rows.
CREATE TABLE check_moves (
    cycle    INTEGER NOT NULL,   -- the check's cycle: its fetch, and the index and results after it
    url      VARCHAR NOT NULL,
    queries  INTEGER NOT NULL,   -- the queries compared
    carried  DOUBLE NOT NULL,    -- impact the replaced copy carries in the cycle's results (frequency x view weight)
    moved    DOUBLE NOT NULL,    -- of that and of what the new copy carries, the part in top Ks only one copy is in
    PRIMARY KEY (cycle, url)
);
