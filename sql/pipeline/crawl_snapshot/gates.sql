-- Crawl page: quality gate results per cycle and gate; a failed check of severity warn does not stop a cycle.
-- report: whether the gate wrote its HTML report (setting gate_reports), which the page links.
SELECT cycle, gate, count(*) AS checks,
       count(*) FILTER (WHERE success) AS passed,
       count(*) FILTER (WHERE NOT success AND severity = 'fail') AS failed,
       count(*) FILTER (WHERE NOT success AND severity = 'warn') AS warned,
       count(report) > 0 AS report
FROM dq_results
GROUP BY cycle, gate
ORDER BY cycle, gate;
