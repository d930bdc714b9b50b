-- Every anchor text pointing at the pages numbered $first..$last in r_refresh, with the number of links carrying
-- it (one row with a NULL anchor for a page without any; r_anchor_texts, refresh_inputs.sql).
SELECT url, anchor, links
FROM r_anchor_texts
WHERE n BETWEEN $first AND $last
ORDER BY url, anchor;
