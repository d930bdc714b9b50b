-- proportional (Cho & Garcia-Molina, SIGMOD 2000): pages refreshed in proportion to their change rate, within a fixed
-- refresh budget (refresh_budget): by the changes expected since the last check, estimated rate x cycles since it.
SELECT url, host, round(change_rate * since, 12) AS value, overdue AS first,
       json_merge_patch(estimate, json_object('why', 'rate ' || round(change_rate, 4) || '/cycle (by ' || pooling
                                                      || ') x ' || since || ' cycles since the check, within the '
                                                      || 'refresh budget')) AS parts
FROM refresh_candidates;
