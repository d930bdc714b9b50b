-- The newest S' model trained up to cycle $cycle that was saved: its cycle, file, features and validation RMSE.
SELECT cycle, file, features, metrics->>'validation_rmse' AS validation_rmse
FROM model_runs
WHERE model = 's_prime' AND cycle <= $cycle AND file IS NOT NULL
ORDER BY cycle DESC
LIMIT 1;
