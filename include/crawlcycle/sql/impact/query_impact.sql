-- Query-based impact of the frontier pages in cycle $cycle's sketches: the summed frequency of the needy queries
-- whose sketch holds the page, and those queries, most frequent first.
CREATE OR REPLACE TEMP TABLE s_impact AS
SELECT s.url, sum(n.frequency) AS query_impact,
       list(s.query ORDER BY n.frequency DESC, s.query) AS queries
FROM sketches s JOIN needy_queries n ON n.cycle = s.cycle AND n.query = s.query
WHERE s.cycle = $cycle AND NOT s.crawled
GROUP BY s.url;
