-- Pages of s_scope (seq) holding at least $share of the n-grams of each staged query (s_query_grams: qid, gram),
-- with the shares found anywhere, in the URL and in anchors. The index is probed once per query n-gram.
WITH need AS (
    SELECT qid, count(*) AS grams FROM s_query_grams GROUP BY qid
), hits AS (
    SELECT q.qid, n.seq, count(DISTINCT q.gram) AS found,
           count(DISTINCT q.gram) FILTER (n.source = 'url') AS in_url,
           count(DISTINCT q.gram) FILTER (n.source = 'anchor') AS in_anchor
    FROM s_query_grams q JOIN url_ngrams n ON n.gram = q.gram SEMI JOIN s_scope s ON s.seq = n.seq
    GROUP BY q.qid, n.seq
)
SELECT h.qid, h.seq, h.found / need.grams AS share, h.in_url / need.grams AS url_share,
       h.in_anchor / need.grams AS anchor_share
FROM hits h JOIN need USING (qid)
-- a share a hair under rho (float rounding of rho x grams) still matches
WHERE h.found >= $share * need.grams - 1e-9
ORDER BY h.qid, h.seq;
