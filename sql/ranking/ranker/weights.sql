-- BM25F weight of each query term (s_query_terms) in each indexed page holding it, and the page's prestige prior:
--   tf~    = sum over fields f of w_f * tf_f / (1 - b_f + b_f * len_f / avg_len_f)
--   weight = idf * tf~ / (k1 + tf~),  idf = ln(1 + (N - df + 0.5) / (df + 0.5)),  N = indexed pages
--   prior  = prestige_weight * ln(1 + pagerank * known URLs)   (0 for a page without PageRank yet)
-- A page's score for a query is the sum of its weights for the query's terms plus its prior (the macros bm25f_tf,
-- bm25_weight and prestige_prior, sql/views/functions.sql).
-- N, known URLs, df, the average lengths and each page's PageRank are those the open index epoch holds
-- (crawlcycle.ranking.epochs), so that a score computed in one cycle of the epoch equals the same score in the next;
-- with $today the crawl's statistics now, those a full re-rank would read (the epoch's drift compares the two).
-- With $changed only the pages index run $cycle wrote are weighed.
-- key packs (term id, page) into one BIGINT: joins on it run several times faster than on the pair.
-- inputs: s_query_terms
CREATE OR REPLACE TEMP TABLE r_weights AS
WITH fields AS (
    SELECT * FROM bm25f_fields($fields, $weights, $bs, $today)
), terms AS (
    SELECT DISTINCT tid, term FROM s_query_terms
), docs AS (
    SELECT doc, url, pagerank FROM posting_docs WHERE NOT $changed OR index_run_wrote(cycle, anchor_cycle, $cycle)
), tf AS (
    SELECT t.tid, p.term, p.doc, exact_sum(bm25f_tf(f.weight, p.tf, f.b, l.length, f.avg_length)) AS tf
    FROM postings p
    JOIN terms t ON t.term = p.term
    JOIN fields f ON f.field = p.field
    JOIN posting_lengths l ON l.doc = p.doc AND l.field = p.field
    WHERE NOT $changed OR p.doc IN (SELECT doc FROM docs)
    GROUP BY t.tid, p.term, p.doc
), df AS (
    SELECT term, df FROM posting_terms WHERE NOT $today
    UNION ALL
    SELECT p.term, count(DISTINCT p.doc) FROM postings p SEMI JOIN terms t ON t.term = p.term WHERE $today
    GROUP BY p.term
)
SELECT tf.tid::BIGINT << 32 | tf.doc AS key, tf.tid, tf.doc,
       bm25_weight(sizes.pages, t.df, tf.tf, $k1) AS weight,
       prestige_prior($prestige_weight, CASE WHEN $today THEN f.pagerank ELSE d.pagerank END, sizes.known) AS prior
FROM tf
JOIN df t ON t.term = tf.term
JOIN docs d ON d.doc = tf.doc
LEFT JOIN frontier f ON $today AND f.url = d.url
CROSS JOIN ranker_sizes($today) sizes;
