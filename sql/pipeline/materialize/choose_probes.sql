-- Origins whose robots.txt the fetch of cycle $fetch_cycle asks for, outside the batch, before any of their URLs may
-- take a slot: never contacted (seeds' origins aside: the first batch asks them) or due after a back-off
-- (next_try_cycle reached; an origin that gave no page is tried again with a batch slot instead: batch_candidates); at
-- most $origin_probes, by the priority of their best URL scored in cycle $score_cycle.
DELETE FROM probes WHERE fetch_cycle = $fetch_cycle;
INSERT INTO probes (fetch_cycle, score_cycle, origin, host, reason, best_url, best_priority)
WITH best AS (
    SELECT url_origin(s.url) AS origin, any_value(f.host) AS host,
           first(s.url ORDER BY s.priority DESC, s.url) AS best_url, max(s.priority) AS best_priority
    FROM frontier_scores s JOIN frontier f USING (url)
    WHERE s.score_cycle = $score_cycle
    GROUP BY 1
)
SELECT $fetch_cycle, $score_cycle, b.origin, b.host, coalesce(o.state, 'new'), b.best_url, b.best_priority
FROM best b LEFT JOIN v_origins o USING (origin)
WHERE (o.origin IS NULL AND b.origin NOT IN (SELECT url_origin(url) FROM frontier WHERE source = 'seed'))
   OR (o.state <> origin_ok() AND o.last_error <> error_no_pages() AND o.next_try_cycle <= $fetch_cycle)
ORDER BY b.best_priority DESC, b.origin
LIMIT $origin_probes;
