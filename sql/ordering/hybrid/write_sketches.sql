-- Sketches of cycle $cycle (s_sketches: query, rank, url, score, crawled): each needy query's top K of its crawled
-- results by S and matched frontier pages by S', ties by URL with crawled pages first (score_model.top_k).
-- inputs: s_odds, s_sketches
DELETE FROM sketches WHERE cycle = $cycle;
INSERT INTO sketches (cycle, query, rank, url, score, crawled)
SELECT $cycle, query, rank, url, score, crawled
FROM s_sketches;
-- The top-K odds of every matched frontier page (s_odds: query, url, bar, p_top_k, s_prime); without an odds model
-- (p_top_k NULL), 1 for the pages in the query's sketch and 0 for the others.
DELETE FROM top_k_odds WHERE cycle = $cycle;
INSERT INTO top_k_odds (cycle, query, url, s_prime, bar, p_top_k)
SELECT $cycle, o.query, o.url, o.s_prime, o.bar,
       coalesce(o.p_top_k, CASE WHEN s.url IS NULL THEN 0 ELSE 1 END)
FROM s_odds o
LEFT JOIN sketches s ON s.cycle = $cycle AND s.query = o.query AND s.url = o.url;
