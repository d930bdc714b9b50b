-- Query overlap plus a PageRank-based impact estimate (a decision tree fitted on crawled pages), each scaled by its
-- largest value and weighted by the hybrid weights (temp table s_query_overlap, staged by crawlcycle.query_overlap).
SELECT e.url, round(o.q_hybrid, 12) AS priority,
       json_object('overlap', o.overlap, 'prestige_impact', round(o.prestige, 9), 'queries', o.queries) AS parts
FROM eligible e JOIN s_query_overlap o USING (url);
