"""Needy queries: the share of the cycle's query-log partition whose results most need new pages.

neediness(q) = f(q) x improvability(q), improvability predicted from the average score of the query's
current top K (see ``improvability``). Until a fit exists, every query gets the ``improvability_prior``
setting, so neediness orders queries by frequency.

``needy_share`` of the partition's queries are kept (at least ``needy_min``, at most ``needy_max``), and with them
every query as needy as the last one kept: ties are all in or all out, so that no order by query text (nor a last
digit) decides which of them steer the crawl. For the
policy that uses them (``hybrid``), queries are taken in order of neediness but one without any frontier
candidate (no eligible page matches it: ``score_model.pair_features``'s matching) is skipped for the next, so
the needy budget goes to queries the next batch can serve; ``needy_queries.candidates`` records how many each had.
"""

from __future__ import annotations

import math
from datetime import date

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, staged
from crawlcycle.models import score_model
from crawlcycle.models.improvability import latest_fit
from crawlcycle.ordering import registry
from crawlcycle.ranking import evidence_index, ngram_index
from crawlcycle.settings import Settings

LOOKAHEAD = 2  # queries checked for candidates per needy query still wanted, per round


def needy_count(settings: Settings, queries: int) -> int:
    """How many needy queries a partition of ``queries`` queries gets."""
    return min(queries, settings.needy_max, max(settings.needy_min, math.ceil(settings.needy_share * queries)))


def _matched(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
             queries: list[str]) -> tuple[pl.Series, pl.DataFrame]:
    """Eligible frontier pages matching each of ``queries`` (normalised), in that order; needs temp table s_scope.
    And in ``evidence`` mode the candidates themselves by query (query and the columns of
    ``evidence_index.candidates`` but qid; no rows in ``ngram`` mode)."""
    staged = score_model.stage_queries(queries)
    if settings.match_mode == "evidence":
        found = evidence_index.candidates(con, settings, cycle, staged.select("qid", "query"))
        rows = found.join(staged.select("qid", "query"), on="qid").drop("qid")
    else:
        found = ngram_index.match(con, settings, staged.select("qid", "query"), settings.match_share)
        rows = pl.DataFrame(schema={"query": pl.String})
    counts = staged.join(found.group_by("qid").len(), on="qid", how="left").select("query", "len")
    by_query = dict(zip(counts["query"], counts["len"].fill_null(0), strict=True))
    return pl.Series("candidates", [by_query[q] for q in queries], dtype=pl.Int32), rows


def select_needy(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, partition: date) -> pl.DataFrame:
    """Replace and return the needy queries of ``cycle`` drawn from query-log ``partition``."""
    queries = query(con, "ordering/needy_queries/needy_candidates", cycle=cycle, partition=partition)
    keep = needy_count(settings, queries.height)
    fitted = latest_fit(con, cycle)
    # at most K of a query's results can be new: the curve is capped there where it extrapolates upwards
    improvability = (fitted.predict(pl.col("avg_score")).clip(upper_bound=settings.top_k) if fitted
                     else pl.lit(settings.improvability_prior))
    ranked = (queries.with_columns(improvability=improvability.cast(pl.Float64))
              .with_columns(neediness=pl.col("frequency") * pl.col("improvability"))
              .sort(pl.col("neediness") * (1 + 1e-9 * pl.col("noise")), "query", descending=[True, False])
              .drop("noise"))
    found = pl.DataFrame(schema={"query": pl.String})
    if settings.policy == "hybrid":
        needy, found = _servable(con, settings, cycle, ranked, keep)
    else:
        needy = _ties_in(ranked, keep).with_columns(candidates=pl.lit(None, dtype=pl.Int32))
    needy = needy.with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32))
    with staged(con, s_needy=needy):
        run_sql(con, "ordering/needy_queries/write_needy", cycle=cycle)
    if found.height:
        # the score stage's sketches start from these (evidence_index.stored_candidates)
        with staged(con, s_found=found.join(needy.select("query"), on="query")):
            run_sql(con, "ordering/needy_queries/write_needy_candidates", cycle=cycle)
    return needy


def _servable(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, ranked: pl.DataFrame,
              keep: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``keep`` neediest queries of ``ranked`` with at least one frontier candidate and those that tie with the last
    of them (:func:`_ties_in`), with their counts; and the candidates of the queries checked (see :func:`_matched`)."""
    registry.stage_eligible(con, settings, cycle)
    run_sql(con, "ordering/frontier_scope")
    checked: list[pl.DataFrame] = []
    rows: list[pl.DataFrame] = []
    found = start = 0
    while found < keep and start < ranked.height:
        window = ranked.slice(start, max(LOOKAHEAD * (keep - found), 1))
        counts, matched = _matched(con, settings, cycle, window["query"].to_list())
        window = window.with_columns(candidates=counts)
        checked.append(window.filter(pl.col("candidates") > 0))
        rows.append(matched)
        found += checked[-1].height
        start += window.height
    if found >= keep > 0:  # the queries as needy as the last one kept, not checked yet, are checked too
        bar = pl.concat(checked)["neediness"][keep - 1]
        tied = ranked.slice(start).filter(pl.col("neediness") == bar)
        if tied.height:
            counts, matched = _matched(con, settings, cycle, tied["query"].to_list())
            checked.append(tied.with_columns(candidates=counts).filter(pl.col("candidates") > 0))
            rows.append(matched)
    rows_found = pl.concat(rows) if rows else pl.DataFrame(schema={"query": pl.String})
    if not checked:
        return ranked.head(0).with_columns(candidates=pl.lit(0, pl.Int32)), rows_found
    return _ties_in(pl.concat(checked), keep), rows_found


def _ties_in(ranked: pl.DataFrame, keep: int) -> pl.DataFrame:
    """The first ``keep`` rows of ``ranked`` and every later one as needy as the last of them: queries that tie are all
    in or all out, for which of them an order by text would keep is chance (and a last digit could swap them)."""
    if not 0 < keep <= ranked.height:
        return ranked.head(keep)
    return ranked.filter(pl.col("neediness") >= ranked["neediness"][keep - 1])
