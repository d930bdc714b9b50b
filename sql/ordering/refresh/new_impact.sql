-- The expected impact of each new URL that may take a slot (s_new: url, parts), in the units of a refresh's value (one
-- top-K slot of a query asked once): the ordering policy's own mix when its parts give one (hybrid: expected_impact),
-- else the prestige regression (coefficients $b0 .. $b22) over the URL's scaled PageRank and in-links.
-- inputs: s_new
SELECT n.url,
       coalesce(CAST(n.parts->>'expected_impact' AS DOUBLE),
                round(prestige_impact(f.pagerank * (SELECT count(*) FROM frontier), f.in_links,
                                      $b0, $b1, $b2, $b11, $b12, $b22), 9)) AS value
FROM s_new n JOIN frontier f USING (url)
ORDER BY n.url;
