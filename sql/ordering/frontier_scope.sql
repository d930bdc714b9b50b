-- Pages sketches may hold from the frontier: those eligible for the next batch (temp table eligible).
CREATE OR REPLACE TEMP TABLE s_scope AS SELECT discovery_seq AS seq FROM eligible;
