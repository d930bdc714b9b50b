-- S(p, q) of the staged pairs (s_pairs: qid, url) whose page is indexed: the page's weights for the query's terms
-- plus its prior (see weights.sql), 0 for a page holding none of the terms.
-- inputs: s_pairs, s_query_terms
SELECT p.qid, p.url, coalesce(exact_sum(w.weight) + any_value(w.prior), 0) AS score
FROM s_pairs p
JOIN posting_docs d ON d.url = p.url
LEFT JOIN s_query_terms t ON t.qid = p.qid
LEFT JOIN r_weights w ON w.key = t.tid::BIGINT << 32 | d.doc
GROUP BY p.qid, p.url;
