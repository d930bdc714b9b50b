-- The reference results of the latest cycle before $cycle that holds any, if the open index epoch ranked them, with
-- their pages' index numbers, into r_previous: written marks a page that index run $cycle wrote or removed, whose
-- score the carried result no longer holds.
CREATE OR REPLACE TEMP TABLE r_previous AS
SELECT r.query, r.rank, r.url, d.doc, r.score, d.doc IS NULL OR index_run_wrote(d.cycle, d.anchor_cycle, $cycle) AS written
FROM query_results r LEFT JOIN posting_docs d ON d.url = r.url
WHERE r.source = 'reference'
  AND r.cycle = (SELECT max(cycle) FROM query_results WHERE cycle < $cycle)
  AND r.cycle >= (SELECT opened_cycle FROM index_epochs WHERE closed_cycle IS NULL);
