-- Pages a query's crawled results compete with for its top K (setting odds_bar = frontier): the frontier pages
-- eligible for the next batch (temp table eligible), as the sketches' (ordering/frontier_scope.sql).
CREATE OR REPLACE TEMP TABLE s_scope AS SELECT discovery_seq AS seq FROM eligible;
