-- The frontier candidates of cycle $cycle's needy queries (s_found), where the score stage's sketches start from.
-- inputs: s_found
INSERT INTO needy_candidates
SELECT $cycle, query, seq, evidence_score, term_share, via_results
FROM s_found;
