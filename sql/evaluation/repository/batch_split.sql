-- The batch of cycle $cycle by kind: new URLs and refreshes (stored pages fetched again).
SELECT kind, count(*) AS urls FROM batches WHERE fetch_cycle = $cycle GROUP BY kind ORDER BY kind;
