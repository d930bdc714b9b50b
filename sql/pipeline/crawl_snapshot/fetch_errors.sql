-- Crawl page: fetch errors by class and cycle.
SELECT cycle, error_class, urls FROM v_fetch_errors ORDER BY cycle, urls DESC, error_class;
