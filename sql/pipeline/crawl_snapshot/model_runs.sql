-- Crawl page: every model fit with its metrics, by cycle.
SELECT cycle, model, version, metrics FROM model_runs ORDER BY cycle, model;
