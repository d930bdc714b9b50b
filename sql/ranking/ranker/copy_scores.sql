-- S(p, q) of other copies of indexed pages, each in place of its page's indexed copy (see weights.sql): s_copy_postings
-- holds the title and text postings of each copy (url, field, term, tf), s_pair_terms the pairs to score with their
-- query's terms (query, url, term). The anchor and url fields, the PageRank and the index's statistics are the index's,
-- so that the copy's score compares with the indexed pages' scores of the same queries: the index epoch's
-- (weights.sql), the PageRank the crawl holds now for a page no longer indexed (a term no indexed page holds counts
-- the copy alone). A copy holding none of a query's terms has no score for it: the ranker ranks only pages
-- holding a term.
-- inputs: s_copy_postings, s_pair_terms
WITH fields AS (
    SELECT * FROM bm25f_fields($fields, $weights, $bs, false)
), wanted AS (
    SELECT DISTINCT t.url, t.term, d.doc FROM s_pair_terms t LEFT JOIN posting_docs d USING (url)
LEFT JOIN frontier f USING (url)
), copy AS (  -- the copy's postings of the wanted terms: its own title and text, the indexed anchor and url fields
    SELECT c.url, c.field, c.term, c.tf FROM s_copy_postings c SEMI JOIN wanted w USING (url, term)
    UNION ALL
    SELECT w.url, p.field, p.term, p.tf
    FROM wanted w JOIN postings p ON p.doc = w.doc AND p.term = w.term
    WHERE p.field IN ('anchor', 'url')
), lengths AS (
    SELECT url, field, sum(tf) AS length FROM s_copy_postings GROUP BY url, field
    UNION ALL
    SELECT d.url, l.field, l.length
    FROM (SELECT DISTINCT url, doc FROM wanted) d JOIN posting_lengths l ON l.doc = d.doc
    WHERE l.field IN ('anchor', 'url')
), tf AS (
    SELECT c.url, c.term, exact_sum(bm25f_tf(f.weight, c.tf, f.b, l.length, f.avg_length)) AS tf
    FROM copy c JOIN fields f USING (field) JOIN lengths l USING (url, field)
    GROUP BY c.url, c.term
), sizes AS (
    SELECT * FROM ranker_sizes(false)
), weights AS (
    SELECT t.url, t.term, bm25_weight(s.pages, greatest(coalesce(d.df, 0), 1), t.tf, $k1) AS weight
    FROM tf t
    LEFT JOIN posting_terms d USING (term)
    CROSS JOIN sizes s
)
SELECT p.query, p.url,
       exact_sum(w.weight) + prestige_prior($prestige_weight, any_value(coalesce(d.pagerank, f.pagerank)),
                                            any_value(s.known)) AS score
FROM s_pair_terms p
JOIN weights w USING (url, term)
LEFT JOIN posting_docs d USING (url)
LEFT JOIN frontier f USING (url)
CROSS JOIN sizes s
GROUP BY p.query, p.url
ORDER BY p.query, p.url;
