-- Crawl page: the checks that did not pass in the latest cycle with gate results.
SELECT cycle, gate, expectation, severity, failed_rows, observed, examples
FROM dq_results
WHERE NOT success AND cycle = (SELECT max(cycle) FROM dq_results)
ORDER BY gate, expectation;
