-- Evidence the links of cycle $cycle bring to the URLs they point at: each anchor text, the words around it, and
-- the title of the linking page (once per linking page).
SELECT f.discovery_seq AS seq, 'anchor' AS field, l.anchor AS content
FROM links l JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle AND l.anchor <> ''
UNION ALL
SELECT f.discovery_seq, 'context', l.context
FROM links l JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle AND coalesce(l.context, '') <> ''
UNION ALL
SELECT f.discovery_seq, 'title', any_value(p.title)
FROM links l JOIN frontier f ON f.url = l.dst JOIN pages p ON p.url = l.src
WHERE l.cycle = $cycle AND coalesce(p.title, '') <> ''
GROUP BY f.discovery_seq, l.src
ORDER BY 1, 2, 3;
