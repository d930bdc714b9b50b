-- The moving share m up to cycle $cycle: the share of a changed page's carried impact that its re-fetch moved in or out
-- of a top K, beyond what moves when the page has not changed. A check at cycle c compares the page's results of
-- c - 1 (its old copy) with those of c, over the queries that have results in both cycles (query_results): carried =
-- sum of frequency x view_weight(rank before), moved = the same over the queries whose top K it left, plus frequency x
-- view_weight(rank after) over those it entered. A move within a top K is not counted: a searcher is served the same
-- pages (repository quality counts which pages a top K holds). Between two cycles the index grows around every page
-- and its neighbours change, which moves results whether or not the page changed: the unchanged checks' moved /
-- carried is that, the changed checks' beyond it is the change's. Per cycle c: m_c = changed moved / carried -
-- unchanged moved / carried (c's unchanged checks, or all cycles' when c has none), within [0, 1]; m = the changed
-- checks' m_c with $weight checks' worth of the prior $prior. Only checks of pages that carried impact count (a refresh
-- of one that carries none is worth nothing anyway); until such a change has been seen, the prior.
WITH freq AS (
    SELECT y.cycle, l.query, exact_sum(l.frequency) AS frequency
    FROM query_log l JOIN cycles y ON y.interval_start = l.partition
    GROUP BY ALL
), checks AS (
    SELECT cycle, url, changed FROM page_checks WHERE changed IS NOT NULL AND cycle <= $cycle
), shared AS (
    SELECT a.cycle, a.query
    FROM (SELECT DISTINCT cycle, query FROM query_results) a
    JOIN (SELECT DISTINCT cycle, query FROM query_results) b ON b.cycle = score_cycle_of(a.cycle) AND b.query = a.query
), ranks AS (
    SELECT c.cycle, c.url, c.changed, f.frequency,
           coalesce(max(view_weight(r.rank, $top_k)) FILTER (WHERE r.cycle = score_cycle_of(c.cycle)), 0) AS before,
           coalesce(max(view_weight(r.rank, $top_k)) FILTER (WHERE r.cycle = c.cycle), 0) AS after
    FROM checks c
    JOIN query_results r ON r.url = c.url AND r.cycle IN (score_cycle_of(c.cycle), c.cycle)
    SEMI JOIN shared s ON s.cycle = c.cycle AND s.query = r.query
    JOIN freq f ON f.cycle = c.cycle AND f.query = r.query
    GROUP BY c.cycle, c.url, c.changed, r.query, f.frequency
), per_check AS (
    SELECT cycle, url, changed, exact_sum(frequency * before) AS carried,
           exact_sum(frequency * CASE WHEN (before > 0) <> (after > 0) THEN before + after ELSE 0 END) AS moved
    FROM ranks GROUP BY ALL
    HAVING carried > 0
), per_cycle AS (
    SELECT cycle, count(*) FILTER (WHERE changed) AS checks,
           sum(moved) FILTER (WHERE changed) / sum(carried) FILTER (WHERE changed) AS changed_moved,
           sum(moved) FILTER (WHERE NOT changed) AS unchanged_moved,
           sum(carried) FILTER (WHERE NOT changed) AS unchanged_carried
    FROM per_check GROUP BY cycle
), effect AS (
    SELECT *, least(1, greatest(0, changed_moved - coalesce(
               unchanged_moved / unchanged_carried,
               sum(unchanged_moved) OVER () / sum(unchanged_carried) OVER (), 0))) AS share
    FROM per_cycle
)
SELECT coalesce(sum(checks), 0) AS checks, round(coalesce(sum(checks * share) / sum(checks), 0), 9) AS moved_share,
       round((coalesce(sum(checks * share) FILTER (WHERE checks > 0), 0) + $weight * $prior)
             / (coalesce(sum(checks), 0) + $weight), 12) AS share
FROM effect;
