-- Content-independent features of the matched pairs staged in s_pairs (qid, seq and the features the matching
-- found: n-gram shares, query_terms, evidence figures): what S' predicts S from. Host figures come from s_host_stats.
-- inputs: s_host_stats, s_pairs
SELECT p.* EXCLUDE (seq), f.url,
       ln(1 + f.in_links) AS log_in_links,
       ln(1 + f.pagerank * n.known) AS log_pagerank,
       ln(1 + coalesce(h.pages, 0)) AS log_host_pages,
       coalesce(h.shown_share, 0) AS host_shown_share
FROM s_pairs p
JOIN frontier f ON f.discovery_seq = p.seq
LEFT JOIN s_host_stats h ON h.host = f.host
CROSS JOIN (SELECT count(*) AS known FROM frontier) n
ORDER BY p.qid, f.url;
