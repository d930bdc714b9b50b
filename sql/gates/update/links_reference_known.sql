-- Links of this cycle go from a fetched page (or a redirected URL) to a known URL.
SELECT l.src, l.dst,
       CASE WHEN p.url IS NULL AND NOT coalesce(s.status LIKE 'redirected%', false) THEN 'unknown source'
            ELSE 'unknown destination' END AS problem
FROM links l
LEFT JOIN pages p ON p.url = l.src
LEFT JOIN frontier s ON s.url = l.src
LEFT JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle
  AND ((p.url IS NULL AND NOT coalesce(s.status LIKE 'redirected%', false)) OR f.url IS NULL);
