-- Sketches of cycle $cycle from the staged candidates (s_candidates: query, url, score, crawled): the top K of each
-- needy query's crawled results by S and matched frontier pages by S', ties by URL with crawled pages first.
DELETE FROM sketches WHERE cycle = $cycle;
INSERT INTO sketches (cycle, query, rank, url, score, crawled)
SELECT $cycle, query, row_number() OVER (PARTITION BY query ORDER BY score DESC, crawled DESC, url) AS rank, url,
       score, crawled
FROM s_candidates
QUALIFY rank <= $top_k;
