-- Query overlap of each matched page (s_overlap_pairs: qid, seq, share, query, frequency): the sum of f(q) x the
-- share of q's n-grams the page holds, and the ten most frequent matched queries.
-- inputs: s_overlap_pairs
SELECT f.url, exact_sum(p.frequency * p.share) AS overlap,
       list(p.query ORDER BY p.frequency DESC, p.query)[1:10] AS queries
FROM s_overlap_pairs p JOIN frontier f ON f.discovery_seq = p.seq
GROUP BY f.url;
