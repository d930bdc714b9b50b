-- Undo what a previous run of cycle $cycle wrote, so a re-run replaces its output exactly. The tables ordering
-- policies own are cleared by crawlcycle.ordering.registry.clear_cycle, from the policy registry.
UPDATE frontier f SET attempts = f.attempts - 1
FROM fetch_log l LEFT JOIN batches b ON b.fetch_cycle = l.cycle AND b.url = l.url
WHERE l.cycle = $cycle AND l.url = f.url AND url_attempt_failed(l.outcome, coalesce(b.kind = 'refresh', false));
-- Pages of earlier cycles that this cycle folded into their canonical are fetched pages again, as before the fold.
UPDATE frontier f SET status = state_fetched(), status_cycle = p.cycle
FROM pages p
WHERE p.url = f.url AND p.folded_cycle = $cycle AND p.cycle < $cycle;
UPDATE pages SET duplicate_of = NULL, folded_cycle = NULL WHERE folded_cycle = $cycle;
UPDATE frontier SET status = state_unfetched(), status_cycle = NULL, retry_after_cycle = NULL
WHERE status_cycle = $cycle;
DELETE FROM url_ngrams WHERE cycle = $cycle;
UPDATE frontier SET ngram_cycle = NULL WHERE ngram_cycle = $cycle;
DELETE FROM evidence_postings WHERE cycle = $cycle;
DELETE FROM evidence_lengths WHERE cycle = $cycle;
UPDATE frontier SET evidence_cycle = NULL WHERE evidence_cycle = $cycle;
DELETE FROM frontier WHERE first_seen_cycle = $cycle;
DELETE FROM links WHERE cycle = $cycle;
DELETE FROM url_rejects WHERE cycle = $cycle;
DELETE FROM pages WHERE cycle = $cycle;
-- The page rows and out-links the cycle's checks changed or removed, as they were before it.
DELETE FROM pages WHERE url IN (SELECT url FROM replaced_pages WHERE replaced_cycle = $cycle);
INSERT INTO pages BY NAME SELECT * EXCLUDE (replaced_cycle) FROM replaced_pages WHERE replaced_cycle = $cycle;
INSERT INTO links BY NAME SELECT * EXCLUDE (replaced_cycle) FROM replaced_links WHERE replaced_cycle = $cycle;
DELETE FROM replaced_pages WHERE replaced_cycle = $cycle;
DELETE FROM replaced_links WHERE replaced_cycle = $cycle;
DELETE FROM page_checks WHERE cycle = $cycle;
DELETE FROM fetch_log WHERE cycle = $cycle;
DELETE FROM fetch_requests WHERE cycle = $cycle;
DELETE FROM sitemap_fetches WHERE cycle = $cycle;
DELETE FROM sitemap_lastmods WHERE cycle = $cycle;
DELETE FROM origin_tries WHERE cycle = $cycle;
DELETE FROM path_yield WHERE cycle = $cycle;
DELETE FROM query_results WHERE cycle = $cycle;
DELETE FROM needy_queries WHERE cycle = $cycle;
DELETE FROM needy_candidates WHERE cycle = $cycle;
DELETE FROM query_improvement WHERE cycle = $cycle;
DELETE FROM model_runs WHERE cycle = $cycle;
DELETE FROM frontier_scores WHERE score_cycle = $cycle;
DELETE FROM batches WHERE score_cycle = $cycle;
DELETE FROM probes WHERE score_cycle = $cycle;
DELETE FROM refresh_scores WHERE score_cycle = $cycle;
DELETE FROM check_moves WHERE cycle = $cycle;
