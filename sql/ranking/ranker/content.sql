-- Title and main text of the pages numbered $first..$last in r_refresh whose content fields this run writes
-- (r_content, refresh_inputs.sql).
SELECT url, title, text
FROM r_content
WHERE n BETWEEN $first AND $last
ORDER BY url;
