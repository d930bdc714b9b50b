-- Add the n-grams staged by ngram_index.update (s_new_grams: gram, seq, source) that a URL does not have yet from
-- that source, tagged with index run $cycle.
INSERT INTO url_ngrams (gram, seq, source, cycle)
SELECT DISTINCT g.gram, g.seq, g.source, $cycle
FROM s_new_grams g
ANTI JOIN url_ngrams n ON n.gram = g.gram AND n.seq = g.seq AND n.source = g.source;
DROP TABLE s_new_grams;
