-- The scored pages (r_scored, for top_cut.sql) of the queries carried from the last ranked cycle (s_queries; results
-- in r_previous): each query's previous results that index run $cycle left as they were, with the pages that run
-- wrote (r_weights, weighed for them alone), a previous result it wrote among them with its new score. Under the
-- index epoch's statistics no other page's score moved. A query none of whose results the run wrote takes written
-- pages only if its bound, the sum over its terms of the highest weight a written page holds for the term plus the
-- highest prior, reaches its K-th score: the other queries keep their results without scoring a pair (r_open lists
-- those that do not). Whether the merged top K is exact is told by its K-th place (crawlcycle.ranking.ranker).
-- inputs: s_queries, s_query_terms
CREATE OR REPLACE TEMP TABLE r_open AS
WITH best AS (
    SELECT tid, max(weight) AS weight, max(prior) AS prior FROM r_weights GROUP BY tid
), bound AS (
    SELECT t.qid, exact_sum(b.weight) + max(b.prior) AS bound
    FROM s_query_terms t JOIN best b ON b.tid = t.tid GROUP BY t.qid
), kth AS (
    SELECT q.qid, count(*) AS results, min(p.score) AS score, bool_or(p.written) AS written
    FROM r_previous p JOIN s_queries q ON q.query = p.query GROUP BY q.qid
)
SELECT k.qid FROM kth k LEFT JOIN bound b ON b.qid = k.qid
WHERE k.written OR k.results < $top_k AND b.bound IS NOT NULL OR b.bound >= k.score;
CREATE OR REPLACE TEMP TABLE r_scored AS
SELECT q.qid, p.doc, p.score FROM r_previous p JOIN s_queries q ON q.query = p.query WHERE NOT p.written
UNION ALL
SELECT t.qid, w.doc, exact_sum(w.weight) + any_value(w.prior) AS score
FROM s_query_terms t JOIN r_open o ON o.qid = t.qid JOIN r_weights w ON w.tid = t.tid
GROUP BY t.qid, w.doc;
