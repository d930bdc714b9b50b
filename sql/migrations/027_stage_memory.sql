-- The memory each stage of a cycle that opens the crawl database took: how many MiB its process's resident set rose
-- above where it stood when the stage started, at its peak (crawlcycle.pipeline.stage_memory). What grows with the
-- batch, the crawl or the changed pages shows here before a stage meets duckdb_memory_limit.
ALTER TABLE cycles ADD COLUMN stage_memory_mib JSON;
