-- Every URL of the cycle's batch was logged exactly once.
SELECT b.url FROM batches b ANTI JOIN fetch_log l ON l.cycle = b.cycle AND l.url = b.url WHERE b.cycle = $cycle;
