-- Which run of its shard's fetch sent each request: a fetch killed and retried (or a replayed cycle) keeps the
-- requests of the runs before, since they reached the servers; rows from before this column were first runs.
ALTER TABLE fetch_requests ADD COLUMN attempt INTEGER DEFAULT 1;
