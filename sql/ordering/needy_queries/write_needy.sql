-- Replace cycle $cycle's needy queries with s_needy (crawlcycle.ordering.needy_queries); its stored candidates go
-- too, written again by write_needy_candidates.sql.
-- inputs: s_needy
DELETE FROM needy_queries WHERE cycle = $cycle;
DELETE FROM needy_candidates WHERE cycle = $cycle;
INSERT INTO needy_queries (cycle, query, frequency, improvability, neediness, rank, candidates)
SELECT $cycle, query, frequency, improvability, neediness, rank, candidates
FROM s_needy;
