-- Frontier evidence index (match_mode = 'evidence'): what is known of each URL before it is fetched, as term
-- frequencies per field, for BM25 matching of needy queries. Rows are added by each refit and tagged with it, so a
-- re-run replaces them; a (term, seq, field) may have rows from several refits, summed when read.
CREATE TABLE evidence_postings (
    term   VARCHAR NOT NULL,
    seq    BIGINT NOT NULL,         -- frontier.discovery_seq of the URL
    field  VARCHAR NOT NULL,        -- url | anchor | context | title (of the linking page)
    tf     INTEGER NOT NULL,
    cycle  INTEGER NOT NULL         -- refit that added the row
);

-- Terms per URL and field added by each refit (summed when read).
CREATE TABLE evidence_lengths (
    seq     BIGINT NOT NULL,
    field   VARCHAR NOT NULL,
    length  INTEGER NOT NULL,
    cycle   INTEGER NOT NULL
);

-- Cycle whose refit indexed the URL's own tokens as evidence (NULL: not yet).
ALTER TABLE frontier ADD COLUMN evidence_cycle INTEGER;
