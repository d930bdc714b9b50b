-- At most per_host_cap URLs of one host in the next batch.
SELECT host, count(*) AS urls FROM batches WHERE cycle = $cycle + 1 GROUP BY host HAVING count(*) > $per_host_cap;
