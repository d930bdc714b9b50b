-- URLs per host in the batch cycle $cycle chose.
SELECT host, count(*) AS urls FROM batches WHERE score_cycle = $cycle GROUP BY host;
