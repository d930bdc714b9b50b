-- The next batch holds at most batch_size URLs.
SELECT count(*) AS urls FROM batches WHERE cycle = $cycle + 1 HAVING count(*) > $batch_size;
