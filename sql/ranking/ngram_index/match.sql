-- The staged pairs with their n-gram shares (s_shares: qid, seq, share, url_share, anchor_share, from
-- ngram_shares.sql) whose page holds at least $share of the query's n-grams (s_query_grams); at most $per_query
-- pages per query, spread by a hash of the page, not by any score.
-- inputs: s_query_grams, s_shares
WITH need AS (
    SELECT qid, count(*) AS grams, greatest(ceil($share * count(*) - 1e-9), 1)::INTEGER AS t
    FROM s_query_grams GROUP BY qid
)
SELECT s.qid, s.seq, s.share, s.url_share, s.anchor_share
FROM s_shares s JOIN need USING (qid)
WHERE round(s.share * need.grams) >= need.t
QUALIFY row_number() OVER (PARTITION BY s.qid ORDER BY hash(s.seq), s.seq) <= $per_query
ORDER BY s.qid, s.seq;
