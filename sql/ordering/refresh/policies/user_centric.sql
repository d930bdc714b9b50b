-- user_centric (Pandey & Olston, "User-centric Web crawling", WWW 2005): the page's expected loss of rank-weighted
-- impact from staleness, P(changed since the last check) x the impact it carries in today's top K (view_weight:
-- r^-1.5); a fixed refresh budget (refresh_budget) rather than competing with the new URLs. Pages past
-- max_revisit_cycles first.
SELECT url, host, round(p_changed * carried_impact, 12) AS value, overdue AS first,
       json_merge_patch(estimate, json_object(
           'why', CASE WHEN overdue THEN 'not checked for ' || since || ' cycles: max_revisit_cycles passed'
                       ELSE 'P(changed) ' || round(p_changed, 4) || ' x carried impact ' || round(carried_impact, 4)
                            || ', within the refresh budget' END)) AS parts
FROM refresh_candidates;
