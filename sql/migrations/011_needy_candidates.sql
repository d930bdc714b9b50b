-- Frontier candidates of each cycle's needy queries (match_mode = 'evidence'), as select_needy found them while
-- checking which queries the next batch can serve: the score stage's sketches start from these rows instead of
-- matching the same queries again over the same evidence and scope.
CREATE TABLE needy_candidates (
    cycle           INTEGER NOT NULL,
    query           VARCHAR NOT NULL,
    seq             BIGINT NOT NULL,      -- frontier.discovery_seq of the candidate
    evidence_score  DOUBLE NOT NULL,
    term_share      DOUBLE NOT NULL,
    via_results     BOOLEAN NOT NULL
);
