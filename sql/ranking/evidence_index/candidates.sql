-- Candidate pages of s_scope (seq) for each staged query (s_query_terms: qid, term), and their evidence features.
-- BM25F over the evidence fields (weights $weights, b $bs per field of $fields, one k1 $k1):
--   tf~ = sum over fields of w_f * tf_f / (1 - b_f + b_f * len_f / avg_len_f), weight = idf * tf~ / (k1 + tf~)
-- with idf and average lengths over every URL with evidence. Each query term nominates the $depth in-scope pages
-- it weighs most (a bounded top-$depth per term as the weights stream by: no table of every (term, page) pair);
-- every nominee is scored over all the query's terms and the best $per_query per query are kept, compared at
-- rank_key's digits (ties: the lower seq), so that pages whose scores a last digit apart do not swap on noise.
-- Besides, the pages the query's current results (query_results of cycle $cycle, s_queries: qid, query) link to
-- are candidates: the best $per_query per query by their best linking result's score.
-- Returns (qid, seq, evidence_score, term_share = share of the query's terms in its evidence, via_results).
-- inputs: s_queries, s_query_terms, s_scope
WITH fields AS (
    SELECT unnest($fields) AS field, unnest($weights) AS weight, unnest($bs) AS b
), stats AS (
    SELECT field, sum(length) / count(DISTINCT seq) AS avg_length FROM evidence_lengths GROUP BY field
), docs AS (
    SELECT count(DISTINCT seq) AS n FROM evidence_lengths
), query_terms AS (
    SELECT DISTINCT qid, term FROM s_query_terms
), terms AS (
    SELECT DISTINCT term FROM query_terms
), df AS (
    -- distinct (term, page) pairs first: a grouped count(DISTINCT) holds every pair in memory at once
    SELECT term, count(*) AS df
    FROM (SELECT DISTINCT e.term, e.seq FROM evidence_postings e SEMI JOIN terms t ON t.term = e.term)
    GROUP BY term
), idf AS (
    SELECT df.term, ln(1 + (docs.n - df.df + 0.5) / (df.df + 0.5)) AS idf FROM df CROSS JOIN docs
), lengths AS (
    SELECT l.seq, l.field, sum(l.length) AS length
    FROM evidence_lengths l SEMI JOIN s_scope s ON s.seq = l.seq
    GROUP BY ALL
), tf_rows AS (
    -- tf~ is linear in each field's tf, so the rows of every cycle add up without grouping them by field first
    SELECT e.term, e.seq, f.weight * e.tf / (1 - f.b + f.b * l.length / s.avg_length) AS tf
    FROM evidence_postings e
    SEMI JOIN terms t ON t.term = e.term
    JOIN fields f ON f.field = e.field AND f.weight > 0
    JOIN lengths l ON l.seq = e.seq AND l.field = e.field
    JOIN stats s ON s.field = e.field
), weights AS (
    SELECT w.term, w.seq, i.idf * w.tf / ($k1 + w.tf) AS weight
    FROM (SELECT term, seq, exact_sum(tf) AS tf FROM tf_rows GROUP BY term, seq) w
    JOIN idf i USING (term)
), nominated AS MATERIALIZED (
    -- each term's $depth heaviest pages (ties at rank_key's digits: the lower seq), kept as bounded lists as the rows
    -- stream by
    SELECT term, unnest(max_by(seq, (rank_key(weight), -seq), $depth)) AS seq FROM weights GROUP BY term
), nominees AS (
    SELECT DISTINCT q.qid, n.seq FROM query_terms q JOIN nominated n USING (term)
), by_results AS (
    SELECT q.qid, f.discovery_seq AS seq
    FROM s_queries q
    JOIN query_results r ON r.cycle = $cycle AND r.query = q.query
    JOIN links l ON l.src = r.url
    JOIN frontier f ON f.url = l.dst
    SEMI JOIN s_scope s ON s.seq = f.discovery_seq
    GROUP BY q.qid, f.discovery_seq
    QUALIFY row_number() OVER (PARTITION BY q.qid ORDER BY rank_key(max(r.score)) DESC, f.discovery_seq) <= $per_query
), nominee_weights AS MATERIALIZED (
    -- the weights the scores below read: the nominees' and the result-linked pages', for the staged terms (their
    -- rows picked before grouping, so the grouping covers only them)
    SELECT w.term, w.seq, i.idf * w.tf / ($k1 + w.tf) AS weight
    FROM (SELECT r.term, r.seq, exact_sum(r.tf) AS tf
          FROM tf_rows r SEMI JOIN (SELECT seq FROM nominated UNION SELECT seq FROM by_results) k ON k.seq = r.seq
          GROUP BY r.term, r.seq) w
    JOIN idf i USING (term)
), by_evidence AS (
    SELECT n.qid, n.seq
    FROM nominees n
    JOIN query_terms q ON q.qid = n.qid
    JOIN nominee_weights w ON w.term = q.term AND w.seq = n.seq
    GROUP BY n.qid, n.seq
    QUALIFY row_number() OVER (PARTITION BY n.qid ORDER BY rank_key(exact_sum(w.weight)) DESC, n.seq) <= $per_query
), candidates AS (
    SELECT qid, seq, bool_or(via_results) AS via_results
    FROM (SELECT qid, seq, false AS via_results FROM by_evidence UNION ALL SELECT qid, seq, true FROM by_results)
    GROUP BY qid, seq
)
SELECT c.qid, c.seq, coalesce(exact_sum(w.weight), 0) AS evidence_score,
       coalesce(count(w.term) / nullif(any_value(t.terms), 0), 0) AS term_share, c.via_results
FROM candidates c
LEFT JOIN (SELECT qid, count(*) AS terms FROM query_terms GROUP BY qid) t ON t.qid = c.qid
LEFT JOIN query_terms q ON q.qid = c.qid
LEFT JOIN nominee_weights w ON w.term = q.term AND w.seq = c.seq
GROUP BY c.qid, c.seq, c.via_results
ORDER BY c.qid, c.seq;
