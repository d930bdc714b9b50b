-- Per cycle and query: how many of its top-K results came from pages fetched in that cycle, against the
-- average top-K score the query had before the cycle. The improvability regression learns from it.
CREATE TABLE query_improvement (
    cycle            INTEGER NOT NULL,
    query            VARCHAR NOT NULL,
    prior_avg_score  DOUBLE NOT NULL,   -- average top-K score in the previous cycle (0: no results then)
    improvement      INTEGER NOT NULL,  -- top-K results that are pages fetched in this cycle
    PRIMARY KEY (cycle, query)
);
