-- The moving share m up to cycle $cycle: of the impact the replaced copies of changed pages carry, the share their
-- new copies moved in or out of a top K, each check judged in the index of its own cycle (check_moves: the replaced
-- copy ranked in place of the new one). Both copies meet the same index, queries and neighbours, so what moves is the
-- page's change, not the crawl's growth around it. m = (n x min(1, moved / carried) + $weight x $prior) / (n +
-- $weight) over the n checks whose replaced copy carried impact (a refresh of a page that carries none is worth
-- nothing anyway); until such a check, the prior.
WITH kept AS (
    SELECT count(*) AS checks, least(1, sum(moved) / sum(carried)) AS moved_share
    FROM check_moves WHERE cycle <= $cycle AND carried > 0
)
SELECT checks, round(coalesce(moved_share, 0), 9) AS moved_share,
       round((checks * coalesce(moved_share, 0) + $weight * $prior) / (checks + $weight), 12) AS share
FROM kept;
