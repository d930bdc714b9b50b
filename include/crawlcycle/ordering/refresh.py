"""Refreshes: which stored pages the next batch fetches again, and how one batch is divided between them and the new
URLs (docs/explanation/refresh.md). The policies are ``contracts.refresh_policies.REGISTRY``.

The score stage of cycle N writes the refresh policy's candidates with their values to ``refresh_scores``
(:func:`score_refresh`): the stored pages not checked within ``min_revisit_cycles`` (``refresh_candidates``, from the
change-rate estimate ``page_freshness`` in ``sql/views/functions.sql``), each valued by the policy's SQL. Materialize
then divides the batch (:func:`divide`) by the policy's budget: impact lets refreshes and new URLs compete by value in
one unit, expected search impact (a new URL's from :func:`new_impact`); the rivals take their due pages first, or a
fixed share of the batch.
"""

from __future__ import annotations

import json
import math

import duckdb
import polars as pl

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.contracts.refresh_policies import RefreshPolicy, refresh_policy
from crawlcycle.db import check_inputs, execute, fetch_rows, query, run_sql, scalar, staged, statements
from crawlcycle.models import prestige
from crawlcycle.ranking import ranker
from crawlcycle.settings import Settings

CALIBRATION_CYCLES = 3  # batches whose new URLs calibrate a new URL's expected impact against what they carry


def record_moves(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace the ``check_moves`` of cycle ``cycle``: each copy its checks found changed and replaced, ranked in
    place of the new copy in the cycle's index, against the new copy's results; return the checks written. A cycle
    whose results were loaded from another engine has no scores to rank a copy by: it writes none."""
    copies = query(con, "ordering/refresh/replaced_copies", cycle=cycle)
    pairs = copies.select("url", query=pl.col("queries")).explode("query")
    scores = (ranker.copy_scores(con, settings, copies, pairs) if pairs.height
              else pairs.with_columns(score=pl.lit(None, dtype=pl.Float64)))
    with staged(con, s_copy_pairs=pairs, s_copy_scores=scores):
        run_sql(con, "ordering/refresh/check_moves", cycle=cycle, top_k=settings.top_k)
    return scalar(con, "SELECT count(*) FROM check_moves WHERE cycle = ?", [cycle])


def moving_share(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> float:
    """The share of a changed page's carried impact its re-fetch moves, each check's replaced copy ranked against
    its new one in the same index (``check_moves``), learned up to cycle ``cycle`` with ``moving_share_prior`` worth
    ``refresh_prior_weight`` checks."""
    return fetch_rows(con, "ordering/refresh/moving_share", cycle=cycle, prior=settings.moving_share_prior,
                      weight=settings.refresh_prior_weight)[0][-1]


def stage_candidates(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> None:
    """The temp table ``refresh_candidates``: the stored pages the batch scored in cycle ``cycle`` may fetch again."""
    run_sql(con, "ordering/refresh/candidates", cycle=cycle, fetch_cycle=batch_cycles(score=cycle)[1],
            refresh=json.dumps(settings.section("refresh")), min_cycles=settings.min_revisit_cycles,
            top_k=settings.top_k, scope=settings.scope_rules(), obey_crawl_delay=settings.obey_crawl_delay,
            max_delay=settings.max_delay)


def score_refresh(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace the refresh scores of cycle ``cycle`` (they choose the refreshes of the next cycle's fetch); return
    pages kept. Only the best that may take a slot are kept: twice the per-host cap per host, twice the batch in
    all (a margin for pages robots.txt now disallows, as batch_candidates keeps for new URLs)."""
    entry = refresh_policy(settings.refresh_policy)
    record_moves(con, settings, cycle)
    con.execute("DELETE FROM refresh_scores WHERE score_cycle = ?", [cycle])
    if entry.budget == "none":
        return 0
    stage_candidates(con, settings, cycle)
    check_inputs(con, entry.sql)
    (select,) = statements(entry.sql)
    # equal values (pages that carry no impact today) go by P(changed): a fill should find changes, not 304s
    best = "first DESC, value DESC, CAST(parts->>'p_changed' AS DOUBLE) DESC NULLS LAST, url"
    execute(con, "INSERT INTO refresh_scores (score_cycle, url, host, policy, value, first, parts) "
                 f"SELECT $cycle, url, host, $policy, value, first, parts FROM ({select}) "
                 f"QUALIFY row_number() OVER (PARTITION BY host ORDER BY {best}) <= 2 * $per_host_cap "
                 f"ORDER BY {best} LIMIT 2 * $batch_size",
            cycle=cycle, policy=entry.name, fetch_cycle=batch_cycles(score=cycle)[1],
            moving_share=moving_share(con, settings, cycle),
            per_host_cap=settings.per_host_cap, batch_size=settings.batch_size)
    return scalar(con, "SELECT count(*) FROM refresh_scores WHERE score_cycle = ?", [cycle])


def scored(con: duckdb.DuckDBPyConnection, cycle: int) -> pl.DataFrame:
    """The refresh candidates cycle ``cycle`` scored: url, host, value, first, parts, p_changed."""
    return con.sql("SELECT url, host, value, first, parts, CAST(parts->>'p_changed' AS DOUBLE) AS p_changed "
                   "FROM refresh_scores WHERE score_cycle = ? ORDER BY url", params=[cycle]).pl()


def new_impact(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, new: pl.DataFrame) -> pl.DataFrame:
    """``new`` (url, parts, ...) with ``value``: each URL's expected impact in the units of a refresh's value,
    calibrated by what the new URLs of the last ``CALIBRATION_CYCLES`` batches carry in the results of cycle
    ``cycle``; its parts gain expected_impact and impact_calibration."""
    with staged(con, s_new=new.select("url", "parts")):
        values = query(con, "ordering/refresh/new_impact", cycle=cycle, top_k=settings.top_k,
                       window=CALIBRATION_CYCLES, **prestige.coefficients(con, cycle))
    return new.drop("parts").join(values, on="url", how="left", maintain_order="left")


def _per_host(rows: pl.DataFrame, cap: int, taken: pl.DataFrame | None = None) -> pl.DataFrame:
    """``rows`` in their order, at most ``cap`` per host together with the rows ``taken`` already."""
    used = dict(taken.group_by("host").len().iter_rows()) if taken is not None and taken.height else {}
    before = pl.col("host").replace_strict(used, default=0, return_dtype=pl.Int64)
    return rows.filter(pl.int_range(pl.len()).over("host") + before < cap)


def divide(new: pl.DataFrame, refresh: pl.DataFrame, entry: RefreshPolicy, settings: Settings) -> pl.DataFrame:
    """The batch from the new URLs that may take a slot (url, host, priority, parts, overflow; under a ``value``
    budget with ``value``, their expected impact) and the refresh candidates (url, host, value, first, parts,
    p_changed; equal values by P(changed)): at most
    ``batch_size`` URLs and ``per_host_cap`` per host, as url, host, kind, priority, parts, value, rank.

    The refresh part takes ``want`` pages within refresh_share_min and refresh_share_max of the batch: under
    ``value`` as many as the batch holds when both kinds are taken by value, under ``quota`` refresh_budget of the
    batch, under ``due`` every due page. The new URLs fill the rest in the ordering policy's order; under ``value``
    and ``quota`` the refreshes fill what they leave. Under ``value`` a refresh less likely to have changed than
    refresh_fill_p_changed takes a slot only from a new URL it is worth more than, never an empty one, unless it is
    overdue or a probe. Rank: by value under ``value``; else the refreshes, the new
    URLs, then the refreshes that fill. Either way the new URLs keep the ordering policy's order among themselves."""
    size, cap = settings.batch_size, settings.per_host_cap
    low, high = math.ceil(settings.refresh_share_min * size), math.floor(settings.refresh_share_max * size)
    refresh = refresh.sort(["first", "value", "p_changed", "url"], descending=[True, True, True, False],
                           nulls_last=True).with_columns(
        kind=pl.lit("refresh"), priority=pl.col("value"))
    new = new.sort(["overflow", "priority", "url"], descending=[False, True, False]).with_columns(
        kind=pl.lit("new"), first=pl.lit(False), value=pl.col("value") if "value" in new.columns else pl.lit(None))

    def by_value(rows: pl.DataFrame) -> pl.DataFrame:
        """Two queues merged by the value at their heads (a tie goes to the new URL): the refreshes by value, the new
        URLs in the ordering policy's order, which value need not follow (a new URL waits behind a better one)."""
        key = pl.when(pl.col("kind") == "new").then(pl.col("value").fill_null(0.0).cum_min().over("kind")) \
            .otherwise(pl.col("value"))
        return rows.with_columns(key=key, at=pl.int_range(pl.len())).sort(
            ["first", "key", "kind", "at"], descending=[True, True, False, False]).drop("key", "at")

    if entry.budget == "value":
        # A refresh unlikely to find a change (P(changed) under refresh_fill_p_changed) takes a slot only from a new
        # URL it is worth more than (the batch's weakest, per-host caps aside), unless overdue or a probe (what it
        # tells is its worth): a slot left empty costs less than a check that finds nothing.
        values = new["value"].fill_null(0.0).cum_min()
        bar = values[size - 1] if new.height >= size else math.inf
        probe = pl.col("parts").str.json_path_match("$.probe") == "true"
        eligible = pl.col("first") | probe.fill_null(False) | (pl.col("value") > bar) | (
            pl.col("p_changed").fill_null(1.0) >= settings.refresh_fill_p_changed)
        # the others stay behind, for refresh_share_min alone
        refresh = refresh.with_columns(eligible=eligible).sort("eligible", descending=True, maintain_order=True)
        both = pl.concat([refresh.filter("eligible").select("url", "host", "kind", "first", "value"),
                          new.select("url", "host", "kind", "first", "value")], how="vertical_relaxed")
        want = _per_host(by_value(both), cap).head(size).filter(pl.col("kind") == "refresh").height
    else:
        want = {"quota": round(settings.refresh_budget * size), "due": refresh.height, "none": 0}[entry.budget]
    columns = ["url", "host", "kind", "priority", "parts", "value", "first"]
    refreshed = _per_host(refresh, cap).head(min(max(want, low), high)).select(columns)
    fresh = _per_host(new, cap, refreshed).head(size - refreshed.height).select(columns)
    batch = pl.concat([refreshed, fresh], how="vertical_relaxed")
    if entry.budget in ("value", "quota"):  # the refreshes fill what the new URLs leave
        room = max(0, min(size - batch.height, high - refreshed.height))
        rest = refresh.filter(~pl.col("url").is_in(refreshed["url"].implode()))
        if entry.budget == "value":
            rest = rest.filter("eligible")
        batch = pl.concat([batch, _per_host(rest, cap, batch).head(room).select(columns)], how="vertical_relaxed")
    if entry.budget == "value":
        batch = by_value(batch)
    return batch.drop("first").with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32))
