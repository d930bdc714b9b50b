-- Sentence embeddings (setting semantic_match) of the texts that describe a page before it is fetched (its URL's
-- words, the anchor texts pointing at it) and of queries, each text embedded once and kept for later cycles.
CREATE TABLE text_vectors (
    text    VARCHAR PRIMARY KEY,
    vector  FLOAT[384] NOT NULL
);
