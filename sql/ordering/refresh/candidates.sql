-- The temp table refresh_candidates: the stored pages the batch of cycle $fetch_cycle may fetch again, with what the
-- refresh policies order them by. A candidate is a fetched page in the crawl scope ($scope) not fetched or checked
-- within min_revisit_cycles, whose origin answered its latest try and asks for no Crawl-delay above $max_delay (when
-- obeyed). Its change rate, P(changed), adaptive interval and due rule are page_freshness's as of $fetch_cycle with
-- the refresh settings $refresh; carried_impact is the impact it has in the results of cycle $cycle (carried_impact
-- in functions.sql). `estimate` holds the figures every policy shows of the page (its refresh_scores parts start from
-- them).
CREATE OR REPLACE TEMP TABLE refresh_candidates AS
WITH ready AS (
    SELECT origin FROM v_origins WHERE state = origin_ok()
    EXCEPT
    SELECT origin FROM robots WHERE $obey_crawl_delay AND crawl_delay > $max_delay
)
SELECT p.*, coalesce(c.carried_impact, 0) AS carried_impact,
       json_object('since', p.since, 'checks', p.checks, 'changes', p.changes, 'change_rate', p.change_rate,
                   'pooling', p.pooling, 'sibling_checks', p.sibling_checks, 'sibling_changes', p.sibling_changes,
                   'p_changed', p.p_changed, 'by_sitemap', p.by_sitemap, 'basis', p.basis,
                   'carried_impact', round(coalesce(c.carried_impact, 0), 9)) AS estimate
FROM page_freshness($fetch_cycle, $refresh::JSON) p
JOIN frontier f ON f.url = p.url
LEFT JOIN carried_impact($cycle, $top_k) c ON c.url = p.url
WHERE f.status = state_fetched()
  AND p.since >= $min_cycles
  AND url_origin(p.url) IN (SELECT origin FROM ready)
  AND scope_reason(f.url, f.host, f.hops, $scope) IS NULL;
