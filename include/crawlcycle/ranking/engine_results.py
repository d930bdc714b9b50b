"""The user's engine decides the results of the pages it has indexed.

When setting ``results_log_dir`` names a results log (:mod:`crawlcycle.ranking.results_log`), each cycle reads its
partition of the cycle's day, or the latest earlier one, after the reference ranker ranked the cycle's queries
(``sql/ranking/engine_results/merge.sql``): a page the partition shows for any query is a page the engine has
indexed, and for those pages the engine's result lists decide which queries' top K hold them and at which rank; the
reference ranker places only the pages the engine has not indexed. Scores stay the reference ranker's (S of the
pair), so the models reading them (S', the top-K odds, the improvability of queries, the mix) keep one scale while
learning from what the engine shows. Rows the engine decided carry source ``engine`` in ``query_results``; the refit
stage records each cycle's merge in ``model_runs`` (model ``engine_results``). Without a results log nothing
changes.
"""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, scalar, staged
from crawlcycle.ranking import ranker, results_log
from crawlcycle.settings import Settings


def merge(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Merge the engine's result lists into cycle ``cycle``'s results (see the module); what it merged, or ``{}``
    without a results-log partition for the cycle or when the cycle holds results loaded whole."""
    day: date | None = scalar(con, "SELECT interval_start FROM cycles WHERE cycle = ?", [cycle])
    found = results_log.partition_before(settings, day) if settings.results_log_dir and day else None
    if found is None or ranker.holds_loaded_results(con, cycle):
        return {}
    partition, rows = found
    asked = query(con, "ranking/ranker/cycle_queries", cycle=cycle)
    # the engine's own scores are on its scale, not the reference ranker's: they are not kept
    indexed = con.sql("SELECT url FROM posting_docs").pl()
    shown = (rows.drop("score").join(asked, on="query", how="semi").join(indexed, on="url", how="semi")
             .sort("query", "rank"))
    queries = sorted(shown["query"].unique())
    pairs = shown.select(qid=pl.col("query").replace_strict(queries, range(len(queries)), return_dtype=pl.UInt32),
                         url="url")
    scored = ranker.pair_scores(con, settings, queries, pairs) if queries else pl.DataFrame(
        schema={"qid": pl.UInt32, "url": pl.String, "score": pl.Float64})
    engine = (shown.with_columns(qid=pairs["qid"]).join(scored, on=["qid", "url"], how="left")
              .select("query", "rank", "url", score=pl.col("score").fill_null(0.0)))
    with staged(con, s_engine=engine, s_engine_pages=rows.select("url").unique()):
        run_sql(con, "ranking/engine_results/merge", cycle=cycle, top_k=settings.top_k)
    counts = con.execute("SELECT count(*) FILTER (source = 'engine'), count(*) FILTER (source <> 'engine') "
                         "FROM query_results WHERE cycle = ?", [cycle]).fetchall()[0]
    metrics = {"engine_partition": partition.isoformat(), "engine_pages": rows["url"].n_unique(),
               "engine_results": counts[0], "reference_results": counts[1], "engine_queries": len(queries)}
    return metrics
