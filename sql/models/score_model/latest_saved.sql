-- The newest fit of model $model up to cycle $cycle that was saved: its cycle, file and features.
SELECT cycle, file, features
FROM model_runs
WHERE model = $model AND cycle <= $cycle AND file IS NOT NULL
ORDER BY cycle DESC
LIMIT 1;
