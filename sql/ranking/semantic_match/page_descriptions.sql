-- What describes each page of s_semantic_seqs (seq) before it is fetched: its URL (url set, text NULL) and its
-- $anchors most used anchor texts (text set, url NULL).
-- inputs: s_semantic_seqs
SELECT f.discovery_seq AS seq, f.url, NULL::VARCHAR AS text
FROM s_semantic_seqs s JOIN frontier f ON f.discovery_seq = s.seq
UNION ALL
SELECT seq, NULL, anchor
FROM (
    SELECT f.discovery_seq AS seq, l.anchor,
           row_number() OVER (PARTITION BY f.discovery_seq ORDER BY count(*) DESC, l.anchor) AS place
    FROM s_semantic_seqs s JOIN frontier f ON f.discovery_seq = s.seq JOIN links l ON l.dst = f.url
    WHERE trim(l.anchor) <> ''
    GROUP BY f.discovery_seq, l.anchor
)
WHERE place <= $anchors
ORDER BY 1, 2, 3;
