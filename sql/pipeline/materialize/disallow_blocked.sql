-- Mark the batch candidates their origin's robots.txt disallows (s_blocked) as disallowed in cycle $cycle.
-- inputs: s_blocked
UPDATE frontier SET status = state_disallowed(), status_cycle = $cycle
WHERE url IN (SELECT url FROM s_blocked);
