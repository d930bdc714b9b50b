-- The candidates select_needy stored for cycle $cycle's needy queries (needy_candidates), for the staged queries
-- (s_queries: qid, query), in evidence_index.candidates' columns and order; only when they are every needy query's
-- and each query has as many as select_needy counted (needy_queries.candidates), else no rows.
-- inputs: s_queries
WITH complete AS (
    SELECT (SELECT count(*) FROM needy_candidates WHERE cycle = $cycle)
               = (SELECT coalesce(sum(candidates), -1) FROM needy_queries WHERE cycle = $cycle)
           AND (SELECT count(*) FROM s_queries)
               = (SELECT count(*) FROM needy_queries WHERE cycle = $cycle)
           AND NOT EXISTS (SELECT query FROM s_queries EXCEPT SELECT query FROM needy_queries WHERE cycle = $cycle)
           AS ok
)
SELECT q.qid, c.seq, c.evidence_score, c.term_share, c.via_results
FROM needy_candidates c
JOIN s_queries q ON q.query = c.query
WHERE c.cycle = $cycle AND (SELECT ok FROM complete)
ORDER BY q.qid, c.seq;
