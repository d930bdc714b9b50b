-- Learned combination (Tran et al.): a decision tree over the other policies' scores predicts each page's impact
-- (temp table s_learned, staged by crawlcycle.ordering.ml; its cross-validation is in model_runs, model 'ml').
-- query_impact is the page's query overlap (the query-based feature). query_priority, the part of the priority that
-- comes from it, is only given while the frontier is ordered by q_hybrid ($tree false: too few crawled pages):
-- the priority is then q_hybrid / its largest value + $tie_break x q_hybrid, and its query part is $query_weight x
-- the scaled overlap times the same factor. A tree's prediction does not split into parts: no query_priority.
-- inputs: s_learned
WITH top AS (
    SELECT max((parts->>'overlap')::DOUBLE) AS overlap,
           coalesce(nullif(max((parts->>'q_hybrid')::DOUBLE), 0), 1) AS q_hybrid
    FROM s_learned
)
SELECT e.url, l.priority,
       json_merge_patch(l.parts, json_object(
           'query_impact', (l.parts->>'overlap')::DOUBLE,
           -- a null member is dropped by the merge: no query_priority under a tree
           'query_priority', CASE WHEN NOT $tree THEN round($query_weight * coalesce((l.parts->>'overlap')::DOUBLE
                                                                               / nullif(t.overlap, 0), 0)
                                                            * (1 / t.q_hybrid + $tie_break), 12) END)) AS parts
FROM eligible e JOIN s_learned l USING (url) CROSS JOIN top t;
