-- Every non-empty anchor text of cycle $cycle's links, with the number of the URL it points at.
SELECT f.discovery_seq AS seq, l.anchor
FROM links l JOIN frontier f ON f.url = l.dst
WHERE l.cycle = $cycle AND l.anchor <> ''
ORDER BY seq, l.anchor;
