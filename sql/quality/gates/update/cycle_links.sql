-- Links the cycle stored: is the source a fetched page (or a redirected URL), the destination a known URL?
SELECT l.src, l.dst,
       p.url IS NOT NULL OR coalesce(url_redirected(s.status), false) AS src_known,
       f.url IS NOT NULL AS dst_known
FROM links l
LEFT JOIN pages p ON p.url = l.src
LEFT JOIN frontier s ON s.url = l.src
LEFT JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle;
