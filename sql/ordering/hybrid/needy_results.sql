-- The crawled top K of cycle $cycle's needy queries: the candidates of their sketches the ranker scored (S).
SELECT r.query, r.url, r.score
FROM query_results r
SEMI JOIN needy_queries n ON n.cycle = r.cycle AND n.query = r.query
WHERE r.cycle = $cycle;
