-- Distinct edges between known URLs (r_ids), self-links left out, nofollow links included: they are evidence of
-- importance. In a defined order: OPIC adds the cash flowing into a URL in edge order.
SELECT DISTINCT s.id AS src, d.id AS dst
FROM links l JOIN r_ids s ON s.url = l.src JOIN r_ids d ON d.url = l.dst
WHERE l.src <> l.dst
ORDER BY src, dst;
