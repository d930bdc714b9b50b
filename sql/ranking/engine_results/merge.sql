-- Cycle $cycle's results with the user's engine deciding for the pages it has indexed: s_engine (query, rank, url,
-- score) holds its result lists of the cycle's queries on pages the crawl indexed, scored by the reference ranker (S,
-- 0 where it finds no query term: the engine matched otherwise); s_engine_pages (url) every page its results-log
-- partition shows, for any query. A page the engine has indexed is shown where the engine shows it, and only there;
-- a page it has not indexed keeps the reference ranker's rank, ahead of an engine result of the same rank. The first
-- $top_k of the merged list are the cycle's results.
-- inputs: s_engine, s_engine_pages
CREATE OR REPLACE TEMP TABLE r_merged AS
WITH candidates AS (
    SELECT query, rank AS position, 0 AS side, url, score, 'engine' AS source FROM s_engine
    UNION ALL
    SELECT r.query, r.rank, 1, r.url, r.score, r.source
    FROM query_results r ANTI JOIN s_engine_pages p ON p.url = r.url
    WHERE r.cycle = $cycle
)
SELECT query, row_number() OVER (PARTITION BY query ORDER BY position, side, url) AS rank, url, score, source
FROM candidates
QUALIFY rank <= $top_k;
DELETE FROM query_results WHERE cycle = $cycle;
INSERT INTO query_results (cycle, query, rank, url, score, source)
SELECT $cycle, query, rank, url, score, source FROM r_merged;
DROP TABLE r_merged;
