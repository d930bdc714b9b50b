-- The newest fit of model $model up to cycle $cycle that was saved: its cycle, file, features and metrics (a kept
-- model's row holds the cycle it was trained in as `trained_cycle`).
SELECT cycle, file, features, metrics
FROM model_runs
WHERE model = $model AND cycle <= $cycle AND file IS NOT NULL
ORDER BY cycle DESC
LIMIT 1;
