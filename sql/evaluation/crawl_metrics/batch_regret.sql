-- The regret of every fetched batch of a simulated crawl by judge $judge (s_true_impact: url, host, impact and the page a
-- fetch of the URL ends on): the true impact of its new URLs, of the best batch of as many URLs from its frontier (the
-- URLs its scores ranked: frontier_scores.score_cycle = batches.score_cycle) and from every snapshot page not fetched
-- before it, each best batch greedy by true impact with at most $per_host_cap URLs per host (under a per-host cap the
-- greedy batch is the best one); and the URLs of the best frontier batch the batch left out. A URL is worth its page's
-- impact while that page is not fetched (a directory URL redirects to its index page: s_true_impact's aliases), and
-- a page counts once in a batch; a redirect's target is not credited otherwise, as the oracle sees it. s_true_impact
-- holds only the pages robots.txt allows (a disallowed URL can take no slot, so it is no better batch's).
-- inputs: s_true_impact
DELETE FROM batch_regret WHERE judge = $judge;
DELETE FROM batch_passed_over WHERE judge = $judge;
CREATE OR REPLACE TEMP TABLE regret_batches AS
WITH credited AS (
    SELECT b.fetch_cycle, b.score_cycle,
           CASE WHEN row_number() OVER (PARTITION BY b.fetch_cycle, t.page ORDER BY b.url) = 1
                     AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = t.page AND p.cycle < b.fetch_cycle)
                THEN t.impact END AS impact
    FROM batches b LEFT JOIN s_true_impact t USING (url)
    WHERE b.kind = 'new' AND b.fetch_cycle IN (SELECT cycle FROM cycles)  -- the batches fetched
)
SELECT fetch_cycle, any_value(score_cycle) AS score_cycle, count(*) AS slots, sum(coalesce(impact, 0)) AS chosen
FROM credited
GROUP BY fetch_cycle;
CREATE OR REPLACE TEMP TABLE regret_best_frontier AS
WITH pool AS (
    SELECT b.fetch_cycle, b.slots, s.url, f.host, t.page, t.impact, s.priority, s.parts,
           row_number() OVER (PARTITION BY b.fetch_cycle ORDER BY s.priority DESC, s.url) AS frontier_rank
    FROM regret_batches b
    JOIN frontier_scores s ON s.score_cycle = b.score_cycle
    JOIN frontier f USING (url)
    LEFT JOIN s_true_impact t USING (url)
    WHERE NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = t.page AND p.cycle < b.fetch_cycle)
), distinct_pages AS (
    SELECT * FROM pool WHERE impact > 0
    QUALIFY row_number() OVER (PARTITION BY fetch_cycle, page ORDER BY url) = 1
), capped AS (
    SELECT * FROM distinct_pages
    QUALIFY row_number() OVER (PARTITION BY fetch_cycle, host ORDER BY impact DESC, url) <= $per_host_cap
)
SELECT * FROM capped
QUALIFY row_number() OVER (PARTITION BY fetch_cycle ORDER BY impact DESC, url) <= slots;
CREATE OR REPLACE TEMP TABLE regret_best_all AS
WITH capped AS (
    SELECT b.fetch_cycle, b.slots, t.url, t.impact
    FROM regret_batches b
    JOIN s_true_impact t ON t.impact > 0 AND t.url = t.page
    WHERE NOT EXISTS (SELECT 1 FROM pages p WHERE p.url = t.url AND p.cycle < b.fetch_cycle)
    QUALIFY row_number() OVER (PARTITION BY b.fetch_cycle, t.host ORDER BY t.impact DESC, t.url) <= $per_host_cap
)
SELECT fetch_cycle, url, impact FROM capped
QUALIFY row_number() OVER (PARTITION BY fetch_cycle ORDER BY impact DESC, url) <= slots;
INSERT INTO batch_regret (fetch_cycle, judge, slots, chosen, best_frontier, best_all)
SELECT b.fetch_cycle, $judge, b.slots, b.chosen,
       coalesce((SELECT sum(impact) FROM regret_best_frontier f WHERE f.fetch_cycle = b.fetch_cycle), 0),
       coalesce((SELECT sum(impact) FROM regret_best_all a WHERE a.fetch_cycle = b.fetch_cycle), 0)
FROM regret_batches b;
INSERT INTO batch_passed_over (fetch_cycle, judge, url, impact, priority, frontier_rank, parts)
SELECT fetch_cycle, $judge, url, impact, priority, frontier_rank, parts
FROM regret_best_frontier f
WHERE NOT EXISTS (SELECT 1 FROM batches b WHERE b.fetch_cycle = f.fetch_cycle AND b.url = f.url);
