-- impact: the expected search impact a re-fetch recovers, in the units of a new URL's expected impact (one top-K slot
-- of a query asked once): P(changed since the last check) x the impact the page carries in today's top K x the moving
-- share $moving_share (ordering/refresh/moving_share). Competes with the new URLs for every slot; pages past
-- max_revisit_cycles first.
SELECT url, host, round(p_changed * carried_impact * $moving_share, 12) AS value, overdue AS first,
       json_merge_patch(estimate, json_object(
           'moving_share', $moving_share,
           'why', CASE WHEN overdue THEN 'not checked for ' || since || ' cycles: max_revisit_cycles passed'
                       ELSE 'P(changed) ' || round(p_changed, 4)
                            || CASE WHEN by_sitemap THEN ' (by its sitemap''s lastmod)'
                                    ELSE ' (rate ' || round(change_rate, 4) || '/cycle by ' || pooling || ')' END
                            || ' x carried impact ' || round(carried_impact, 4)
                            || ' x moving share ' || round($moving_share, 4) END)) AS parts
FROM refresh_candidates;
