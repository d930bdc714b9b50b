-- Pages of s_scope (seq) holding at least $share of the n-grams of each staged query (s_query_grams: qid, gram),
-- with the shares found anywhere, in the URL and in anchors; at most $per_query pages per query (spread by a hash
-- of the page, not by any score).
-- Prefix filter: a page holding t = ceil(share x G) of a query's G n-grams holds one of its G - t + 1 rarest, so
-- only pages holding one of those are counted. With rho = 1 that is the rarest n-gram alone. N-grams on more than
-- $max_df URLs propose no pages (verification still counts them).
WITH need AS (
    SELECT qid, count(*) AS grams, greatest(ceil($share * count(*) - 1e-9), 1)::INTEGER AS t
    FROM s_query_grams GROUP BY qid
), df AS (
    SELECT n.gram, count(*) AS df FROM url_ngrams n SEMI JOIN s_query_grams q ON q.gram = n.gram GROUP BY n.gram
), prefix AS (
    SELECT q.qid, q.gram, coalesce(df.df, 0) AS df
    FROM s_query_grams q JOIN need USING (qid) LEFT JOIN df USING (gram)
    QUALIFY row_number() OVER (PARTITION BY q.qid ORDER BY coalesce(df.df, 0), q.gram) <= need.grams - need.t + 1
), candidates AS (
    SELECT DISTINCT p.qid, n.seq
    FROM prefix p JOIN url_ngrams n ON n.gram = p.gram SEMI JOIN s_scope s ON s.seq = n.seq
    WHERE p.df <= $max_df
), hits AS (
    SELECT c.qid, c.seq, count(DISTINCT q.gram) AS found,
           count(DISTINCT q.gram) FILTER (n.source = 'url') AS in_url,
           count(DISTINCT q.gram) FILTER (n.source = 'anchor') AS in_anchor
    FROM candidates c
    JOIN s_query_grams q ON q.qid = c.qid
    JOIN url_ngrams n ON n.seq = c.seq AND n.gram = q.gram
    GROUP BY c.qid, c.seq
)
SELECT h.qid, h.seq, h.found / need.grams AS share, h.in_url / need.grams AS url_share,
       h.in_anchor / need.grams AS anchor_share
FROM hits h JOIN need USING (qid)
WHERE h.found >= need.t
QUALIFY row_number() OVER (PARTITION BY h.qid ORDER BY hash(h.seq), h.seq) <= $per_query
ORDER BY h.qid, h.seq;
