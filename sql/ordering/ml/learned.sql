-- The frontier and crawled pages scored by the learned combination (s_scored, crawlcycle.ordering.ml), for
-- sql/ordering/policies/ml.sql: priority, and its parts as JSON.
-- inputs: s_scored
CREATE OR REPLACE TEMP TABLE s_learned AS
SELECT url, priority, to_json(parts) AS parts
FROM s_scored;
