-- `cycle` meant two cycles: in frontier_scores the cycle whose score stage wrote the row, in batches and probes the
-- cycle whose fetch takes the row, one later than the cycle whose materialize wrote it from its scores. Each gets its
-- name: frontier_scores.score_cycle; batches and probes carry both, fetch_cycle and score_cycle (= fetch_cycle - 1,
-- written by pipeline/materialize.py), so that a reader joins on equal names. Rows keep their values.
ALTER TABLE frontier_scores RENAME COLUMN cycle TO score_cycle;

-- batches and probes are made again with the new column beside the other cycle (a column added NOT NULL to a table
-- with rows cannot be filled in the same transaction).
CREATE TABLE batches_020 (
    fetch_cycle  INTEGER NOT NULL,   -- the cycle whose fetch takes it
    score_cycle  INTEGER NOT NULL,   -- the cycle whose scores chose it (its materialize wrote it)
    url          VARCHAR NOT NULL,
    host         VARCHAR NOT NULL,
    rank         INTEGER NOT NULL,
    policy       VARCHAR NOT NULL,
    priority     DOUBLE NOT NULL,
    parts        JSON,
    PRIMARY KEY (fetch_cycle, url)
);
INSERT INTO batches_020 SELECT cycle, cycle - 1, url, host, rank, policy, priority, parts FROM batches;
DROP TABLE batches;
ALTER TABLE batches_020 RENAME TO batches;

CREATE TABLE probes_020 (
    fetch_cycle    INTEGER NOT NULL,   -- the cycle whose fetch asks the origin's robots.txt
    score_cycle    INTEGER NOT NULL,   -- the cycle whose scores chose it (its materialize wrote it)
    origin         VARCHAR NOT NULL,
    host           VARCHAR NOT NULL,
    reason         VARCHAR NOT NULL,   -- new | backoff | parked
    best_url       VARCHAR NOT NULL,
    best_priority  DOUBLE NOT NULL,
    PRIMARY KEY (fetch_cycle, origin)
);
INSERT INTO probes_020 SELECT cycle, cycle - 1, origin, host, reason, best_url, best_priority FROM probes;
DROP TABLE probes;
ALTER TABLE probes_020 RENAME TO probes;
