-- Shares of each staged query's n-grams (s_query_grams: qid, gram) found among a candidate page's URL and anchor
-- n-grams (url_ngrams), for the pairs of s_candidates (qid, seq): all, URL only, anchors only.
-- inputs: s_candidates, s_query_grams
WITH need AS (
    SELECT qid, count(*) AS grams FROM s_query_grams GROUP BY qid
), hits AS (
    SELECT c.qid, c.seq, count(DISTINCT q.gram) AS found,
           count(DISTINCT q.gram) FILTER (n.source = 'url') AS in_url,
           count(DISTINCT q.gram) FILTER (n.source = 'anchor') AS in_anchor
    FROM s_candidates c
    JOIN s_query_grams q ON q.qid = c.qid
    JOIN url_ngrams n ON n.seq = c.seq AND n.gram = q.gram
    GROUP BY c.qid, c.seq
)
SELECT c.qid, c.seq, coalesce(h.found / need.grams, 0) AS share, coalesce(h.in_url / need.grams, 0) AS url_share,
       coalesce(h.in_anchor / need.grams, 0) AS anchor_share
FROM s_candidates c
LEFT JOIN need USING (qid)
LEFT JOIN hits h USING (qid, seq)
ORDER BY c.qid, c.seq;
