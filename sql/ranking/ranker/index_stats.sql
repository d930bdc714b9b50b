-- The statistics after index run $cycle, as the open index epoch holds them (epoch_open.sql counts them all again
-- when the next opens): a term already counted keeps its document frequency and is marked stale when pages holding
-- it came or went; a term new to the index, or counted by an earlier run of this cycle, is counted now. A field
-- the epoch has no average length for yet gets today's. The pages this run wrote read their PageRank now.
UPDATE posting_terms SET stale = true WHERE cycle < $cycle AND term IN (SELECT term FROM r_touched);
DELETE FROM posting_terms WHERE cycle >= $cycle AND term IN (SELECT term FROM r_touched);
INSERT INTO posting_terms (term, df, cycle, stale)
SELECT p.term, count(DISTINCT p.doc), $cycle, false
FROM postings p SEMI JOIN r_touched t ON t.term = p.term ANTI JOIN posting_terms k ON k.term = p.term
GROUP BY p.term;
INSERT INTO posting_fields (field, docs, avg_length)
SELECT l.field, l.docs, l.avg_length FROM field_lengths() l ANTI JOIN posting_fields f ON f.field = l.field;
UPDATE posting_docs d SET pagerank = f.pagerank FROM frontier f
WHERE f.url = d.url AND index_run_wrote(d.cycle, d.anchor_cycle, $cycle);
DROP TABLE r_touched;
DROP TABLE r_refresh;
