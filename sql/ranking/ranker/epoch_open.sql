-- Open an index epoch at cycle $cycle ($reason): the statistics of the index as it stands become those every score
-- reads until the next epoch opens (weights.sql), and the epoch it closes records $drift (its last measure, kept when
-- NULL). An epoch an earlier run of this cycle opened, or one of a later cycle since rolled back, is replaced.
DELETE FROM index_epochs WHERE opened_cycle >= $cycle;
UPDATE index_epochs SET closed_cycle = $cycle, drift = coalesce($drift, drift)
WHERE closed_cycle IS NULL OR closed_cycle >= $cycle;
INSERT INTO index_epochs (epoch, opened_cycle, reason, pages, known, ranker)
SELECT coalesce(max(epoch), 0) + 1, $cycle, $reason, (SELECT count(*) FROM posting_docs),
       (SELECT count(*) FROM frontier), $ranker
FROM index_epochs;
-- Document frequencies the last epoch held while pages holding the term came or went are counted again.
CREATE OR REPLACE TEMP TABLE r_stale AS SELECT term FROM posting_terms WHERE stale;
DELETE FROM posting_terms WHERE term IN (SELECT term FROM r_stale);
INSERT INTO posting_terms (term, df, cycle, stale)
SELECT p.term, count(DISTINCT p.doc), $cycle, false FROM postings p SEMI JOIN r_stale s ON s.term = p.term
GROUP BY p.term;
DROP TABLE r_stale;
DELETE FROM posting_fields;
INSERT INTO posting_fields (field, docs, avg_length) SELECT field, docs, avg_length FROM field_lengths();
UPDATE posting_docs d SET pagerank = f.pagerank FROM frontier f WHERE f.url = d.url;
