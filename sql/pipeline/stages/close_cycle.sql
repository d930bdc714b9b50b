-- Close cycle $cycle with the figures of the state it leaves behind: with the estimated freshness of the index, the
-- mean over indexed pages of P(unchanged since the last fetch or check) (page_freshness, by the cycle's refresh
-- settings), and the share of refreshes in the batch the cycle chose.
UPDATE cycles SET
    status = cycle_done(),
    finished_at = current_timestamp,
    frontier_open = (SELECT count(*) FROM v_frontier_open),
    next_batch = (SELECT count(*) FROM batches WHERE score_cycle = $cycle),
    pages_total = (SELECT count(*) FROM pages),
    est_freshness = (SELECT round(exact_avg(1 - p.p_changed), 9)
                     FROM page_freshness($cycle, (SELECT settings->'values' FROM cycles WHERE cycle = $cycle)) p
                     JOIN posting_docs d ON d.url = p.url),
    next_refresh_share = (SELECT round(count(*) FILTER (WHERE kind = 'refresh') / nullif(count(*), 0), 9)
                          FROM batches WHERE score_cycle = $cycle)
WHERE cycle = $cycle;
-- Whether the query-driven part of the policy engaged in cycle $cycle (docs/reference/tables.md, "Query engagement"): its needy queries, those
-- with frontier candidates (NULL when no row says: the policy did not look), the frontier pages its sketches hold
-- (NULL without sketches), and in the batch it chose (score_cycle $cycle) the share of URLs with query-based impact
-- and the share of the priority mass from the query part (NULL when the policy's parts have no such key), of its new
-- URLs (refreshes are the refresh policy's). Shares are rounded so that replays compare equal.
UPDATE cycles SET
    needy_queries = n.needy,
    needy_with_candidates = n.with_candidates,
    sketch_frontier_pages = s.frontier_pages,
    batch_query_share = b.query_share,
    batch_query_mass = b.query_mass
FROM (SELECT count(*) AS needy,
             CASE WHEN count(candidates) > 0 THEN count(*) FILTER (WHERE candidates > 0) END AS with_candidates
      FROM needy_queries WHERE cycle = $cycle) n,
     (SELECT CASE WHEN count(*) > 0 THEN count(DISTINCT url) FILTER (WHERE NOT crawled) END AS frontier_pages
      FROM sketches WHERE cycle = $cycle) s,
     (SELECT CASE WHEN count(parts->>'query_impact') > 0
                  THEN round(count(*) FILTER (WHERE (parts->>'query_impact')::DOUBLE > 0) / count(*), 9) END
                 AS query_share,
             round(exact_sum((parts->>'query_priority')::DOUBLE) / nullif(exact_sum(priority), 0), 9) AS query_mass
      FROM batches WHERE score_cycle = $cycle AND kind = 'new') b
WHERE cycles.cycle = $cycle;
