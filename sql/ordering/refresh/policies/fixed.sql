-- fixed (Nutch's default schedule, db.fetch.interval.default): a page is due fixed_revisit_cycles after its last fetch
-- or check (page_freshness.next_due); due pages go first, the longest unchecked first, and no other is refreshed.
SELECT url, host, since AS value, true AS first,
       json_merge_patch(estimate, json_object('why', 'due: ' || due_rule || ', checked ' || since || ' cycles ago'))
           AS parts
FROM refresh_candidates
WHERE next_due <= $fetch_cycle;
