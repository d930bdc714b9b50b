"""Choose the next batch: c URLs, new ones by the ordering policy's priority and stored pages to fetch again by the
refresh policy (``ordering/refresh.py`` divides the batch between them), at most ``per_host_cap`` per host,
robots-allowed only, from origins that answered their latest try; and the origins whose robots.txt the next fetch
probes outside the batch."""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.contracts.refresh_policies import refresh_policy
from crawlcycle.db import fetch_rows, query, run_sql, scalar, staged
from crawlcycle.fetch.robots import StoredRobots, stored_robots
from crawlcycle.ordering import refresh
from crawlcycle.settings import Settings

PREFIX_BATCHES = 8  # batches' worth of the best scored URLs that candidates() reads first


def robots_filter(robots: StoredRobots, urls: pl.DataFrame) -> pl.Series:
    """True for each URL the stored robots.txt of its origin allows (origins not seen yet: allowed)."""
    return pl.Series([robots.allowed(u) for u in urls["url"]], dtype=pl.Boolean)


def candidates(con: duckdb.DuckDBPyConnection, settings: Settings, robots: StoredRobots, score_cycle: int,
               fetch_cycle: int, untested: int) -> tuple[pl.DataFrame, pl.Series]:
    """The new URLs that may take a slot (``batch_candidates.sql``) and whether robots.txt allows each. They are read
    from the best ``PREFIX_BATCHES`` batches' worth of scored URLs first, which gives the same batch as the whole
    frontier when that prefix alone fills the batch with allowed URLs that are not overflow, ``per_host_cap`` per host
    (a refresh takes a new URL's slot, never adds one); else from every scored URL. Only the robots.txt verdicts
    differ: a disallowed URL outside the prefix is found when it enters one."""
    scored = scalar(con, "SELECT count(*) FROM frontier_scores WHERE score_cycle = ?", [score_cycle])
    for prefix in (PREFIX_BATCHES * settings.batch_size, None):
        cand = query(con, "pipeline/materialize/batch_candidates", score_cycle=score_cycle, fetch_cycle=fetch_cycle,
                     per_host_cap=settings.per_host_cap, max_delay=settings.max_delay,
                     obey_crawl_delay=settings.obey_crawl_delay, untested_slots=untested,
                     new_path_slots=settings.new_path_slots, prefix=prefix)
        allowed = robots_filter(robots, cand)
        usable = (cand.filter(allowed & ~pl.col("overflow")).sort(["priority", "url"], descending=[True, False])
                  .filter(pl.int_range(pl.len()).over("host") < settings.per_host_cap))
        if usable.height >= settings.batch_size or prefix is None or prefix >= scored:
            break
    return cand, allowed


def materialize(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> pl.DataFrame:
    """Write ``batches`` and ``probes`` for the fetch of the next cycle from the scores of cycle ``cycle``; return the
    batch."""
    score_cycle, fetch_cycle = batch_cycles(score=cycle)
    untested = fetch_rows(con, "pipeline/materialize/untested_slots", batch_size=settings.batch_size)[0][0]
    con.execute("UPDATE cycles SET untested_slots = ? WHERE cycle = ?", [untested, cycle])
    robots = stored_robots(con, settings)  # one read of the stored files; each parsed once, when first checked
    cand, allowed = candidates(con, settings, robots, score_cycle, fetch_cycle, untested)
    blocked = cand.filter(~allowed)
    if blocked.height:
        with staged(con, s_blocked=blocked.select("url")):
            run_sql(con, "pipeline/materialize/disallow_blocked", cycle=cycle)
    entry = refresh_policy(settings.refresh_policy)
    new = cand.filter(allowed)
    if entry.budget == "value":
        new = refresh.new_impact(con, settings, score_cycle, new)
    stored = refresh.scored(con, score_cycle)
    batch = refresh.divide(new, stored.filter(robots_filter(robots, stored)), entry, settings)
    with staged(con, s_batch=batch):
        run_sql(con, "pipeline/materialize/write_batch", fetch_cycle=fetch_cycle, score_cycle=score_cycle,
                policy=settings.policy, refresh_policy=entry.name)
    run_sql(con, "pipeline/materialize/choose_probes", score_cycle=score_cycle, fetch_cycle=fetch_cycle,
            origin_probes=settings.origin_probes)
    return batch
