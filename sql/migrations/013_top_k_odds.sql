-- Expected impact (policy hybrid): for each needy query of a cycle and each of its frontier candidates, the odds that
-- the page enters the query's top K once fetched (model_runs.model = 'top_k_odds'), next to its S' and the bar it
-- has to clear (the K-th best S of the query's crawled results; 0 while it has fewer than K). The page's
-- query-based impact is the sum over its queries of frequency x p_top_k.
CREATE TABLE top_k_odds (
    cycle    INTEGER NOT NULL,
    query    VARCHAR NOT NULL,
    url      VARCHAR NOT NULL,
    s_prime  DOUBLE NOT NULL,
    bar      DOUBLE NOT NULL,
    p_top_k  DOUBLE NOT NULL,
    PRIMARY KEY (cycle, query, url)
);
