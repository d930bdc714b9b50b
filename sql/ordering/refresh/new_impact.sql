-- The expected impact of each new URL that may take a slot (s_new: url, parts), in the units of a refresh's value (the
-- impact a page carries in a cycle's results, carried_impact): the ordering policy's own estimate when its parts give
-- one (hybrid: expected_impact, over the needy queries), else the prestige regression (coefficients $b0 .. $b22) over
-- the URL's scaled PageRank and in-links; times the calibration: what the new URLs of the last $window batches
-- carry in the results of cycle $cycle over what they were expected to (1 before any such batch). Returns url, value
-- and parts with expected_impact and impact_calibration.
-- inputs: s_new
WITH expected AS (
    SELECT n.url, n.parts,
           coalesce(CAST(n.parts->>'expected_impact' AS DOUBLE),
                    round(prestige_impact(f.pagerank * (SELECT count(*) FROM frontier), f.in_links,
                                          $b0, $b1, $b2, $b11, $b12, $b22), 9)) AS expected
    FROM s_new n JOIN frontier f USING (url)
), past AS (
    SELECT exact_sum(CAST(b.parts->>'expected_impact' AS DOUBLE)) AS expected,
           exact_sum(coalesce(c.carried_impact, 0)) AS carried
    FROM batches b LEFT JOIN carried_impact($cycle, $top_k) c USING (url)
    WHERE b.kind = 'new' AND b.fetch_cycle BETWEEN $cycle - $window + 1 AND $cycle
      AND b.parts->>'expected_impact' IS NOT NULL
), calibration AS (
    SELECT coalesce(round(carried / nullif(expected, 0), 9), 1.0) AS k FROM past
)
SELECT e.url, round(e.expected * k.k, 12) AS value,
       json_merge_patch(coalesce(e.parts, '{}'), json_object('expected_impact', e.expected,
                                                             'impact_calibration', k.k)) AS parts
FROM expected e CROSS JOIN calibration k
ORDER BY e.url;
