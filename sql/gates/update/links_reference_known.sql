-- Links of this cycle go from a crawled page to a known URL.
SELECT l.src, l.dst, CASE WHEN p.url IS NULL THEN 'unknown source' ELSE 'unknown destination' END AS problem
FROM links l
LEFT JOIN pages p ON p.url = l.src
LEFT JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle AND (p.url IS NULL OR (f.url IS NULL AND NOT l.nofollow));
