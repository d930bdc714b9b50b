-- Query-based impact of the frontier pages of cycle $cycle: the sum over the needy queries each may answer of the
-- query's frequency x the odds the page enters its top K; those queries and their odds, largest share first.
CREATE OR REPLACE TEMP TABLE s_impact AS
SELECT o.url, exact_sum(n.frequency * o.p_top_k) AS query_impact,
       list(o.query ORDER BY n.frequency * o.p_top_k DESC, o.query) AS queries,
       list(round(o.p_top_k, 4) ORDER BY n.frequency * o.p_top_k DESC, o.query) AS odds
FROM top_k_odds o JOIN needy_queries n ON n.cycle = o.cycle AND n.query = o.query
WHERE o.cycle = $cycle AND o.p_top_k > 0
GROUP BY o.url;
