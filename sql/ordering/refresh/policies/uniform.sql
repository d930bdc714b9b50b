-- uniform (Cho & Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD 2000): every page refreshed
-- as often as every other, within a fixed refresh budget (refresh_budget): the page checked longest ago first.
SELECT url, host, since AS value, overdue AS first,
       json_merge_patch(estimate, json_object('why', 'checked ' || since || ' cycles ago: the oldest check first, '
                                                      || 'within the refresh budget')) AS parts
FROM refresh_candidates;
