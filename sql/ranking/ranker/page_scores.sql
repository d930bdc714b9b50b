-- Score of every indexed page holding a term of the one query in s_query_terms (see weights.sql).
SELECT d.url, exact_sum(w.weight) + any_value(w.prior) AS score
FROM r_weights w JOIN posting_docs d ON d.doc = w.doc
GROUP BY d.url
ORDER BY score DESC, d.url;
