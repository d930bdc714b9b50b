-- Crawl page: origins held out of the batches (backoff or parked), why and until which cycle, most waiting URLs first.
SELECT origin, state, failures, last_error, last_tried_cycle, last_tried_at, next_try_cycle, waiting_urls
FROM v_origins_held;
