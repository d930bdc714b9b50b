-- Crawl page: each cycle's settings not at their defaults, with where each came from, and those changed from the
-- cycle before.
SELECT cycle, setting, value, source, previous, changed
FROM v_cycle_settings;
