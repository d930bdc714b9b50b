-- Impact-driven ordering (policy hybrid): the n-gram index needy queries are matched against, and the
-- sketch of each needy query.

-- Word n-grams (n = 1..ngram_max) of each known URL's tokens and of each anchor text pointing at it. Kept
-- up to date by every refit: URLs not indexed yet and the links that arrived in the cycle.
CREATE TABLE url_ngrams (
    gram    VARCHAR NOT NULL,       -- terms joined by one space, e.g. 'list comprehension'
    seq     BIGINT NOT NULL,        -- frontier.discovery_seq of the URL
    source  VARCHAR NOT NULL,       -- url | anchor
    cycle   INTEGER NOT NULL        -- refit that added the row
);

-- Cycle whose refit indexed the URL's own tokens (NULL: not yet).
ALTER TABLE frontier ADD COLUMN ngram_cycle INTEGER;

-- Sketch of each needy query per cycle: the top K of its crawled results by S and of its matched frontier
-- pages by S'. A frontier page in it gains the query's frequency as query-based impact.
CREATE TABLE sketches (
    cycle    INTEGER NOT NULL,
    query    VARCHAR NOT NULL,
    rank     INTEGER NOT NULL,
    url      VARCHAR NOT NULL,
    score    DOUBLE NOT NULL,       -- S (crawled) or S' (frontier)
    crawled  BOOLEAN NOT NULL,
    PRIMARY KEY (cycle, query, rank)
);
