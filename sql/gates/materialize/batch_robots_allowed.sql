-- No URL in the next batch is disallowed by its host's stored robots.txt.
SELECT b.url, b.host FROM batches b WHERE b.cycle = $cycle + 1 AND NOT robots_allowed(b.url);
