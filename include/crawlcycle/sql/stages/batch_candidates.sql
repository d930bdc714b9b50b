-- Scored URLs of cycle $cycle, best first within each host, a margin above the per-host cap
-- so that robots-disallowed ones can be dropped without starving the host.
SELECT s.url, f.host, s.priority, s.parts
FROM frontier_scores s
JOIN frontier f USING (url)
WHERE s.cycle = $cycle
QUALIFY row_number() OVER (PARTITION BY f.host ORDER BY s.priority DESC, s.url) <= 2 * $per_host_cap;
