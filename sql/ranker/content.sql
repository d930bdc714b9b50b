-- Title and main text of the pages numbered $first..$last in r_refresh whose content fields this run writes.
SELECT r.url, p.title, p.text
FROM r_refresh r JOIN pages p ON p.url = r.url
WHERE r.content AND r.n BETWEEN $first AND $last
ORDER BY r.url;
