-- The analyzer the inverted index was built with (crawlcycle.ranking.ranker.Analyzer.key: stop words, stemmer, field
-- cap): an index run under another analyzer empties the index and indexes every page anew.
CREATE TABLE posting_analyzer (
    analyzer  VARCHAR NOT NULL
);
-- An index built before this table existed was built with the default analyzer.
INSERT INTO posting_analyzer SELECT 'stop=33;stem=none;words=0' WHERE EXISTS (SELECT 1 FROM posting_docs);
