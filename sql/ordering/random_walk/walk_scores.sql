-- The random walk's score of each known URL (s_walk_scores, by r_ids id), for sql/ordering/policies/rw.sql and rw_eg.sql.
-- inputs: s_walk_scores
CREATE OR REPLACE TEMP TABLE s_walk AS
SELECT i.url, s.score
FROM r_ids i
JOIN s_walk_scores s USING (id);
