-- Crawl page: every cycle's figures, with the seconds each stage took.
SELECT s.*, c.stage_seconds
FROM v_cycle_summary s
JOIN cycles c USING (cycle)
ORDER BY s.cycle;
