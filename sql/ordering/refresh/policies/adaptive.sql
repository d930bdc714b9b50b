-- adaptive (Nutch's AdaptiveFetchSchedule): a page is due once its own interval has passed since its last fetch or
-- check (page_freshness.adaptive_interval, next_due); due pages go first, the most overdue for their interval first,
-- and no other is refreshed.
SELECT url, host, round(since / adaptive_interval, 12) AS value, true AS first,
       json_merge_patch(estimate, json_object('adaptive_interval', adaptive_interval,
                                              'why', 'due: ' || due_rule || ', checked ' || since || ' cycles ago'))
           AS parts
FROM refresh_candidates
WHERE next_due <= $fetch_cycle;
