-- What hybrid's parts said of every new URL fetched up to cycle $cycle, as its batch was chosen: each part of its
-- score (frontier_scores of the batch's score cycle) scaled to [0, 1] as the priority mixed them. Only URLs that are
-- pages themselves: the impact a redirect's target carries is its own.
SELECT b.url, (s.parts->>'query_part')::DOUBLE AS query_part, (s.parts->>'prestige_part')::DOUBLE AS prestige_part,
       (s.parts->>'discovery_part')::DOUBLE AS discovery_part
FROM batches b
JOIN frontier_scores s ON s.score_cycle = b.score_cycle AND s.url = b.url
SEMI JOIN pages p ON p.url = b.url
WHERE b.kind = 'new' AND b.fetch_cycle <= $cycle AND s.parts->>'query_part' IS NOT NULL
ORDER BY b.url;
