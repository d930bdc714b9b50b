-- Undo what an earlier run of refit $cycle added to the n-gram index.
DELETE FROM url_ngrams WHERE cycle = $cycle;
UPDATE frontier SET ngram_cycle = NULL WHERE ngram_cycle = $cycle;
