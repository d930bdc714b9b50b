-- Metrics of the newest fit of model $model up to cycle $cycle that holds the JSON path $path.
SELECT metrics
FROM model_runs
WHERE model = $model AND cycle <= $cycle AND json_exists(metrics, $path)
ORDER BY cycle DESC
LIMIT 1;
