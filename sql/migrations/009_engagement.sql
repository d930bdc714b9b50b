-- Does the query-driven part of the ordering policy engage? Figures of each cycle, written when it closes
-- (sql/stages/close_cycle.sql); NULL where the cycle's policy gives nothing to count. Rows of cycles closed before
-- this migration keep NULL.
ALTER TABLE cycles ADD COLUMN needy_queries INTEGER;          -- needy queries selected in the cycle
ALTER TABLE cycles ADD COLUMN needy_with_candidates INTEGER;  -- of those, with candidates > 0 (NULL: not looked)
ALTER TABLE cycles ADD COLUMN sketch_frontier_pages INTEGER;  -- distinct frontier URLs in the cycle's sketches
ALTER TABLE cycles ADD COLUMN batch_query_share DOUBLE;       -- share of the next batch's URLs with query_impact > 0
ALTER TABLE cycles ADD COLUMN batch_query_mass DOUBLE;        -- share of its priority mass from query_priority

-- Frontier candidates found for the query when it was selected; NULL when the policy did not look.
ALTER TABLE needy_queries ADD COLUMN candidates INTEGER;
