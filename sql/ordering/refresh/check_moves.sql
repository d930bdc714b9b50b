-- check_moves of cycle $cycle from the replaced copies' scores in the cycle's index (s_copy_scores: query, url, score;
-- crawlcycle.ranking.ranker.copy_scores) against the cycle's reference results, where the new copies are. The
-- replaced copy's rank is one more than the results of other pages above it (ties by URL, as the ranker breaks
-- them); where the new copy holds a slot, the replaced one takes a slot too (the page below the K-th is not kept).
-- carried = sum of frequency x view_weight(the replaced copy's rank); moved = the same over the top Ks only the
-- replaced copy is in, plus frequency x view_weight(the new copy's rank) over those only the new copy is in. A move
-- within a top K is not counted: a searcher is served the same pages (repository quality counts which pages a top K
-- holds). Compared: the queries of s_copy_scores, and those the copy has no score for count as out of the top K.
-- inputs: s_copy_pairs, s_copy_scores
DELETE FROM check_moves WHERE cycle = $cycle;
INSERT INTO check_moves (cycle, url, queries, carried, moved)
WITH before AS (
    SELECT p.query, p.url,
           CASE WHEN s.score IS NULL THEN 0
                ELSE view_weight(1 + count(r.url) FILTER (WHERE r.score > s.score OR (r.score = s.score
                                                                                         AND r.url < s.url)), $top_k)
           END AS weight
    FROM s_copy_pairs p
    LEFT JOIN s_copy_scores s USING (query, url)
    LEFT JOIN query_results r ON r.cycle = $cycle AND r.query = p.query AND r.url <> p.url
    GROUP BY p.query, p.url, s.score
), compared AS (
    SELECT b.url, f.frequency, b.weight AS before, coalesce(view_weight(n.rank, $top_k), 0) AS after
    FROM before b
    JOIN cycle_query_frequencies($cycle) f USING (query)
    LEFT JOIN query_results n ON n.cycle = $cycle AND n.query = b.query AND n.url = b.url
)
SELECT $cycle, url, count(*), exact_sum(frequency * before),
       exact_sum(frequency * CASE WHEN (before > 0) <> (after > 0) THEN before + after ELSE 0 END)
FROM compared
GROUP BY url
ORDER BY url;
