-- URLs the cycle added to the frontier, canonicalized again.
SELECT url, canon(url) AS url_canonical FROM frontier WHERE first_seen_cycle = $cycle;
