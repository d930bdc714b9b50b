-- Pages of s_scope (seq) that may hold at least $share of the n-grams of a staged query (s_query_grams: qid, gram):
-- temp table s_candidates (qid, seq), for ngram_shares.sql and match.sql to verify.
-- Prefix filter: a page holding t = ceil(share x G) of a query's G n-grams holds one of its G - t + 1 rarest, so
-- only pages holding one of those are candidates. With rho = 1 that is the rarest n-gram alone. N-grams on more
-- than $max_df URLs propose no pages (verification still counts them).
-- inputs: s_query_grams, s_scope
CREATE OR REPLACE TEMP TABLE s_candidates AS
WITH need AS (
    SELECT qid, count(*) AS grams, greatest(ceil($share * count(*) - 1e-9), 1)::INTEGER AS t
    FROM s_query_grams GROUP BY qid
), df AS (
    SELECT n.gram, count(*) AS df FROM url_ngrams n SEMI JOIN s_query_grams q ON q.gram = n.gram GROUP BY n.gram
), prefix AS (
    SELECT q.qid, q.gram, coalesce(df.df, 0) AS df
    FROM s_query_grams q JOIN need USING (qid) LEFT JOIN df USING (gram)
    QUALIFY row_number() OVER (PARTITION BY q.qid ORDER BY coalesce(df.df, 0), q.gram) <= need.grams - need.t + 1
)
SELECT DISTINCT p.qid, n.seq
FROM prefix p JOIN url_ngrams n ON n.gram = p.gram SEMI JOIN s_scope s ON s.seq = n.seq
WHERE p.df <= $max_df;
