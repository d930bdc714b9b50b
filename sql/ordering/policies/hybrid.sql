-- Impact-driven (Pandey & Olston): query_weight x query-based + prestige_weight x prestige-based impact +
-- discovery_weight x discovery value, each scaled to [0, 1] over the eligible frontier by $normalization: 'max'
-- divides by the largest value (0 stays 0), 'rank' takes the percent rank (ties share one). Query-based impact
-- (expected: frequency x top-K odds), the needy queries behind it and their odds come from s_impact, the discovery
-- value (learned + opening) from s_discovery (crawlcycle.ordering.hybrid); prestige-based impact is the quadratic
-- prestige regression (coefficients $b*) over scaled PageRank (1 = average page) and in-links, floored at 0. The
-- parts keep each impact in its raw units (query frequency x top-K slots) and their mix by the same weights,
-- expected_impact, which the refresh policy impact weighs refreshes against (ordering/refresh/new_impact), and the
-- weights themselves (mix: the settings', or those learnt by the refit, crawlcycle.models.mix). The priority is kept at
-- rank_key's digits: two URLs whose mixes differ in a last digit tie, and the batch takes them by URL.
-- inputs: s_discovery, s_impact
WITH raw AS (
    SELECT e.url, coalesce(i.query_impact, 0) AS query_impact, coalesce(i.queries, []) AS queries,
           coalesce(i.odds, []) AS odds, coalesce(d.learned, 0) AS learned, coalesce(d.opening, 0) AS opening,
           coalesce(d.learned + d.opening, 0) AS discovery,
           prestige_impact(x.pr, e.in_links, $b0, $b1, $b2, $b11, $b12, $b22) AS prestige_impact
    FROM eligible e
    CROSS JOIN (SELECT count(*) AS known FROM frontier) n
    CROSS JOIN LATERAL (SELECT e.pagerank * n.known AS pr) x
    LEFT JOIN s_impact i ON i.url = e.url
    LEFT JOIN s_discovery d ON d.url = e.url
), scaled AS (
    SELECT *,
           CASE WHEN $normalization = 'rank' THEN percent_rank() OVER (ORDER BY query_impact)
                ELSE coalesce(query_impact / nullif(max(query_impact) OVER (), 0), 0) END AS query_part,
           CASE WHEN $normalization = 'rank' THEN percent_rank() OVER (ORDER BY prestige_impact)
                ELSE coalesce(prestige_impact / nullif(max(prestige_impact) OVER (), 0), 0) END AS prestige_part,
           CASE WHEN $normalization = 'rank' THEN percent_rank() OVER (ORDER BY discovery)
                ELSE coalesce(discovery / nullif(max(discovery) OVER (), 0), 0) END AS discovery_part
    FROM raw
)
SELECT url, rank_key(($query_weight * query_part + $prestige_weight * prestige_part
                       + $discovery_weight * discovery_part) * (1 + 1e-9 * perturbation(url))) AS priority,
       json_object('query_impact', query_impact, 'query_priority', round($query_weight * query_part, 12),
                   'prestige_impact', round(prestige_impact, 9),
                   'query_part', round(query_part, 9), 'prestige_part', round(prestige_part, 9),
                   'discovery_learned', learned, 'discovery_opening', opening,
                   'discovery_part', round(discovery_part, 9),
                   'expected_impact', round(($query_weight * query_impact + $prestige_weight * prestige_impact
                                             + $discovery_weight * discovery)
                                            / ($query_weight + $prestige_weight + $discovery_weight), 9),
                   'needy_queries', queries, 'needy_odds', odds,
                   'mix', json_object('query', $query_weight, 'prestige', $prestige_weight,
                                      'discovery', $discovery_weight)) AS parts
FROM scaled;
