-- Views for the questions people ask of the crawl database.

-- How did each cycle go?
CREATE OR REPLACE VIEW v_cycle_summary AS
SELECT c.cycle, c.interval_start, c.policy, c.status, c.batch_size, c.fetched, c.errors, c.new_urls,
       c.pages_total, c.frontier_open, c.next_batch,
       round(epoch(c.finished_at - c.started_at), 1) AS seconds,
       (SELECT count(*) FROM dq_results d WHERE d.cycle = c.cycle AND NOT d.success) AS gate_failures
FROM cycles c
ORDER BY c.cycle;

-- What is in the next batch, and why?
CREATE OR REPLACE VIEW v_next_batch AS
SELECT b.cycle, b.rank, b.url, b.host, b.policy, b.priority, b.parts, f.in_links, f.pagerank,
       f.first_seen_cycle, f.source
FROM batches b
JOIN frontier f USING (url)
WHERE b.cycle = (SELECT max(cycle) FROM batches)
ORDER BY b.rank;

-- Which hosts are slow or failing?
CREATE OR REPLACE VIEW v_host_health AS
SELECT h.host, h.robots_status, h.crawl_delay, h.delay, h.last_response_ms, h.errors AS consecutive_errors,
       h.backoff_until, count(l.url) AS fetches, count(l.error_class) AS errors,
       round(avg(l.elapsed_ms), 1) AS avg_ms, round(quantile_cont(l.elapsed_ms, 0.95), 1) AS p95_ms
FROM hosts h
LEFT JOIN fetch_log l USING (host)
GROUP BY ALL
ORDER BY avg_ms DESC NULLS LAST;

-- Which queries steer the latest cycle?
CREATE OR REPLACE VIEW v_needy_queries AS
SELECT * FROM needy_queries
WHERE cycle = (SELECT max(cycle) FROM needy_queries)
ORDER BY rank;

-- URLs still to fetch, with what is known of them.
CREATE OR REPLACE VIEW v_frontier_open AS
SELECT * FROM frontier WHERE status IN ('unfetched', 'retry_pending', 'deferred');

-- Fetch errors by class and cycle.
CREATE OR REPLACE VIEW v_fetch_errors AS
SELECT cycle, error_class, count(*) AS urls
FROM fetch_log WHERE error_class IS NOT NULL
GROUP BY ALL ORDER BY cycle, urls DESC;

-- How well each query is served in each cycle: the average score of its top K (rounded, so that
-- replays compare equal). Needy-query selection and the improvability measurement read it.
CREATE OR REPLACE VIEW v_query_topk_score AS
SELECT cycle, query, round(avg(score), 9) AS avg_score, count(*) AS results
FROM query_results
GROUP BY cycle, query;

-- Why each URL of each batch was chosen: its priority split into the query-based and prestige-based impact
-- (policy hybrid), and the needy queries whose sketches hold it. Other policies show their own parts.
CREATE OR REPLACE VIEW v_batch_explain AS
SELECT b.cycle, b.rank, b.url, b.policy, b.priority,
       (b.parts->>'query_impact')::DOUBLE AS query_impact,
       (b.parts->>'query_part')::DOUBLE AS query_part,
       (b.parts->>'prestige_impact')::DOUBLE AS prestige_impact,
       (b.parts->>'prestige_part')::DOUBLE AS prestige_part,
       CAST(b.parts->'needy_queries' AS VARCHAR[]) AS needy_queries,
       f.in_links, f.pagerank, b.parts
FROM batches b
JOIN frontier f USING (url)
ORDER BY b.cycle, b.rank;
