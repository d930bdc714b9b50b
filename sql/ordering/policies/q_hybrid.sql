-- Query overlap plus a PageRank-based impact estimate (a decision tree fitted on crawled pages), each scaled by its
-- largest value and weighted by the hybrid weights (temp table s_query_overlap, staged by crawlcycle.ordering.query_overlap).
-- query_impact is the overlap; query_priority the weighted query part of the priority, $query_weight x the overlap
-- scaled by its largest value, computed as crawlcycle.ordering.query_overlap.q_hybrid_scores does.
-- inputs: s_query_overlap
SELECT e.url, round(o.q_hybrid, 12) AS priority,
       json_object('overlap', o.overlap, 'prestige_impact', round(o.prestige, 9), 'queries', o.queries,
                   'query_impact', o.overlap,
                   'query_priority', round($query_weight * coalesce(o.overlap / nullif(m.overlap, 0), 0), 12)) AS parts
FROM eligible e JOIN s_query_overlap o USING (url)
CROSS JOIN (SELECT max(overlap) AS overlap FROM s_query_overlap) m;
