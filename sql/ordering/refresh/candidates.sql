-- The temp table refresh_candidates: the stored pages the batch of cycle $fetch_cycle may fetch again, with what the
-- refresh policies order them by. A candidate is a fetched page in the crawl scope ($scope) not fetched or checked
-- within min_revisit_cycles, whose origin answered its latest try and asks for no Crawl-delay above $max_delay (when
-- obeyed). Its change rate, P(changed), adaptive interval and due rule are page_freshness's as of $fetch_cycle with
-- the refresh settings $refresh; carried_impact is the impact it has in the top K of the partition's queries of cycle
-- $cycle (query_results): the sum of each query's frequency x the weight of the page's rank (view_weight). `estimate`
-- holds the figures every policy shows of the page (its refresh_scores parts start from them).
CREATE OR REPLACE TEMP TABLE refresh_candidates AS
WITH freq AS (
    SELECT l.query, exact_sum(l.frequency) AS frequency
    FROM query_log l JOIN cycles c ON c.interval_start = l.partition
    WHERE c.cycle = $cycle
    GROUP BY l.query
), carried AS (
    SELECT r.url, exact_sum(f.frequency * view_weight(r.rank, $top_k)) AS carried_impact
    FROM query_results r JOIN freq f USING (query)
    WHERE r.cycle = $cycle AND r.rank <= $top_k
    GROUP BY r.url
), ready AS (
    SELECT origin FROM v_origins WHERE state = 'ok'
    EXCEPT
    SELECT origin FROM robots WHERE $obey_crawl_delay AND crawl_delay > $max_delay
)
SELECT p.*, coalesce(c.carried_impact, 0) AS carried_impact,
       json_object('since', p.since, 'checks', p.checks, 'changes', p.changes, 'change_rate', p.change_rate,
                   'pooling', p.pooling, 'p_changed', p.p_changed,
                   'carried_impact', round(coalesce(c.carried_impact, 0), 9)) AS estimate
FROM page_freshness($fetch_cycle, $refresh::JSON) p
JOIN frontier f ON f.url = p.url
LEFT JOIN carried c ON c.url = p.url
WHERE f.status = 'fetched'
  AND p.since >= $min_cycles
  AND url_origin(p.url) IN (SELECT origin FROM ready)
  AND scope_reason(f.url, f.host, f.hops, $scope) IS NULL;
