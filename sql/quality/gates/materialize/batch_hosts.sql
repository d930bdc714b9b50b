-- URLs per host in the next batch.
SELECT host, count(*) AS urls FROM batches WHERE cycle = $cycle + 1 GROUP BY host;
