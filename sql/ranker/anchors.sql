-- Every anchor text pointing at the pages numbered $first..$last in r_refresh, with the number of links carrying
-- it (one row with a NULL anchor for a page without any).
SELECT r.url, l.anchor, count(l.src) AS links
FROM r_refresh r LEFT JOIN links l ON l.dst = r.url AND l.anchor <> ''
WHERE r.n BETWEEN $first AND $last
GROUP BY r.url, l.anchor
ORDER BY r.url, l.anchor;
