-- Inverted index of the reference ranker (BM25F over the fields title, text, anchor, url), kept up to
-- date by each cycle's index run (crawlcycle.ranking.ranker.index_pages).

-- One row per indexed page: crawled, not noindex, not a duplicate, with a title or main text.
CREATE TABLE posting_docs (
    doc           INTEGER PRIMARY KEY,
    url           VARCHAR NOT NULL UNIQUE,
    cycle         INTEGER NOT NULL,     -- index run that wrote the title, text and url fields
    anchor_cycle  INTEGER NOT NULL      -- index run that last rewrote the anchor field
);

-- Term frequency of each term in each field of each page.
CREATE TABLE postings (
    term   VARCHAR NOT NULL,
    doc    INTEGER NOT NULL,
    field  VARCHAR NOT NULL,            -- title | text | anchor | url
    tf     INTEGER NOT NULL
);

-- Terms per page and field (empty fields have no row).
CREATE TABLE posting_lengths (
    doc     INTEGER NOT NULL,
    field   VARCHAR NOT NULL,
    length  INTEGER NOT NULL
);

-- Document frequency: pages with the term in any field.
CREATE TABLE posting_terms (
    term  VARCHAR PRIMARY KEY,
    df    INTEGER NOT NULL
);

-- Per field: pages where it is not empty, and its average length over all indexed pages.
CREATE TABLE posting_fields (
    field       VARCHAR PRIMARY KEY,
    docs        BIGINT NOT NULL,
    avg_length  DOUBLE NOT NULL
);
