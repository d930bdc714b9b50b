-- impact: the expected search impact a re-fetch recovers, in the units of a new URL's expected impact (one top-K slot
-- of a query asked once): P(changed since the last check) x the impact the page carries in today's top K x the moving
-- share $moving_share (ordering/refresh/moving_share). Competes with the new URLs for every slot; pages past
-- max_revisit_cycles first.
-- Probes: a host changes in events, and one check tells whether it had one since its latest check. Per host, the
-- page whose check tells the most (the most changes seen, then the oldest copy, then the most impact) is worth what
-- learning it would let the next batches recover: P(an event since the host's latest check) x the share of pages an
-- event changes x the moving share x the impact the host's stored pages carry; it takes that value where its own is
-- lower (why: 'probe ...').
WITH probes AS (
    SELECT host, max(host_unseen) AS unseen, any_value(event_share) AS share, count(*) AS pages,
           exact_sum(carried_impact) AS carried
    FROM refresh_candidates GROUP BY host
), probe AS (
    SELECT c.url, round(p.unseen * p.share * $moving_share * p.carried, 12) AS value, p.unseen, p.share, p.pages,
           p.carried
    FROM refresh_candidates c JOIN probes p USING (host)
    QUALIFY row_number() OVER (PARTITION BY c.host ORDER BY c.changes DESC, c.since DESC, c.carried_impact DESC,
                                                          c.url) = 1
), owned AS (
    SELECT c.*, round(c.p_changed * c.carried_impact * $moving_share, 12) AS own,
           b.value AS probe_value, b.unseen AS probe_unseen, b.share AS probe_share, b.pages AS probe_pages,
           b.carried AS probe_carried
    FROM refresh_candidates c LEFT JOIN probe b USING (url)
), valued AS (
    SELECT *, coalesce(probe_value, 0) > own AS probing FROM owned
)
SELECT url, host, CASE WHEN probing THEN probe_value ELSE own END AS value, overdue AS first,
       json_merge_patch(estimate, json_object(
           'moving_share', $moving_share, 'probe', probing,
           'why', CASE WHEN overdue THEN 'not checked for ' || since || ' cycles: max_revisit_cycles passed'
                       WHEN probing THEN 'probe of ' || host || ': P(a change event since its latest check) '
                            || round(probe_unseen, 4) || ' x ' || round(probe_share, 4)
                            || ' of pages an event changes x moving share ' || round($moving_share, 4)
                            || ' x impact its ' || probe_pages || ' stored pages carry ' || round(probe_carried, 4)
                       ELSE 'P(changed) ' || round(p_changed, 4) || ' (' || basis || ')'
                            || ' x carried impact ' || round(carried_impact, 4)
                            || ' x moving share ' || round($moving_share, 4) END)) AS parts
FROM valued;
