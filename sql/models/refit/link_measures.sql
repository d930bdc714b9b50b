-- Store each known URL's in-degree and PageRank (s_measures, by r_ids id) on its frontier row.
-- inputs: s_measures
UPDATE frontier f SET in_links = m.in_links, pagerank = m.pagerank
FROM r_ids i JOIN s_measures m ON m.id = i.id
WHERE f.url = i.url;
