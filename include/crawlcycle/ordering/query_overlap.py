"""Query-overlap orderings, Tran et al.'s readings of Pandey & Olston: policies ``q_overlap`` and ``q_hybrid``.

``q_overlap`` scores a page by how much of the query log its URL tokens and referring anchor texts cover: the
sum, over every query of the cycle's partition that the page matches in the n-gram index (at least
``match_share`` of the query's n-grams), of f(q) x the share matched. Unlike ``hybrid`` it keeps no sketches:
no needy-query selection, no S', no top-K cap, so a query whose results are already good still pulls pages.

``q_hybrid`` adds what link prestige says: a decision tree regression (scikit-learn), fitted on the crawled
pages, maps scaled PageRank to observed impact; the priority is ``hybrid_query_weight`` x overlap +
``hybrid_prestige_weight`` x tree estimate, each divided by its largest value over the scored pages. The
tree's fit goes to ``model_runs`` (model ``q_hybrid_tree``); until one can be fitted, the estimate is the
scaled PageRank itself.
"""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, staged
from crawlcycle.models import score_model
from crawlcycle.models.prestige import MIN_PAGES, observed_impact
from crawlcycle.models.refit import record_model
from crawlcycle.ranking import ngram_index
from crawlcycle.settings import Settings

TREE_DEPTH = 4  # a few PageRank bands: deeper trees memorise single pages of the small crawled set


def overlap_scores(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> pl.DataFrame:
    """(url, overlap, queries) of the pages of temp table ``s_scope`` that match some query of the partition;
    ``queries`` lists the matched queries, most frequent first."""
    log = query(con, "ordering/query_overlap/partition_queries", cycle=cycle)
    queries = score_model.stage_queries(log["query"].to_list()).join(log, on="query")
    pairs = ngram_index.match(con, settings, queries.select("qid", "query"), settings.match_share)
    with staged(con, s_overlap_pairs=pairs.join(queries.select("qid", "query", "frequency"), on="qid")):
        return query(con, "ordering/query_overlap/overlap_scores")


def prestige_estimate(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                      pages: pl.DataFrame) -> pl.Series:
    """Impact the tree predicts for each row of ``pages`` (url, pagerank: scaled) from its scaled PageRank."""
    crawled, source = observed_impact(con, settings, cycle)
    metrics: dict = {"pages": crawled.height, "impact_source": source, "max_depth": TREE_DEPTH,
                     "pages_with_impact": int((crawled["impact"] > 0).sum())}
    if crawled.height < MIN_PAGES or not metrics["pages_with_impact"]:
        metrics["reason"] = f"too little to learn from ({crawled.height} pages, {metrics['pages_with_impact']} " \
                            "with impact): the estimate is the scaled PageRank"
        record_model(con, cycle, "q_hybrid_tree", ["pagerank"], metrics)
        return pages["pagerank"].alias("prestige")
    from sklearn.tree import DecisionTreeRegressor  # slow to import: only where a fit runs

    x, y = crawled.select("pagerank").to_numpy(), crawled["impact"].to_numpy()
    tree = DecisionTreeRegressor(max_depth=TREE_DEPTH, random_state=settings.random_seed).fit(x, y)
    metrics.update(r2=float(tree.score(x, y)), leaves=int(tree.get_n_leaves()))
    record_model(con, cycle, "q_hybrid_tree", ["pagerank"], metrics)
    return pl.Series("prestige", tree.predict(pages.select("pagerank").to_numpy()))


def q_hybrid_scores(settings: Settings, overlap: pl.Expr, prestige: pl.Expr) -> pl.Expr:
    """The q_hybrid priority from the overlap and prestige columns (each scaled by its maximum)."""
    def scaled(col: pl.Expr) -> pl.Expr:
        return (col / col.max()).fill_nan(0.0).fill_null(0.0)

    return settings.hybrid_query_weight * scaled(overlap) + settings.hybrid_prestige_weight * scaled(prestige)


def scored_pages(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                 prestige: bool = True) -> pl.DataFrame:
    """(url, pagerank, in_links, overlap, queries) of every page of ``s_scope``; with ``prestige``, also the tree's
    estimate ``prestige`` and the ``q_hybrid`` priority."""
    pages = query(con, "ordering/query_overlap/scope_pages").join(overlap_scores(con, settings, cycle), on="url",
                                                                  how="left")
    pages = pages.with_columns(pl.col("overlap").fill_null(0.0), pl.col("queries").fill_null([]))
    if not prestige:
        return pages
    pages = pages.with_columns(prestige_estimate(con, settings, cycle, pages))
    return pages.with_columns(q_hybrid=q_hybrid_scores(settings, pl.col("overlap"), pl.col("prestige")))


def _stage(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, prestige: bool) -> dict[str, object]:
    """Score the eligible frontier into temp table ``s_query_overlap`` for the policy SQL; return its parameters."""
    run_sql(con, "ordering/frontier_scope")
    with staged(con, s_scored=scored_pages(con, settings, cycle, prestige)):
        con.execute("CREATE OR REPLACE TEMP TABLE s_query_overlap AS SELECT * FROM s_scored")
    return {"query_weight": settings.hybrid_query_weight}  # q_hybrid.sql: the query part of the priority


def stage_q_overlap(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    return _stage(con, settings, cycle, prestige=False)


def stage_q_hybrid(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    return _stage(con, settings, cycle, prestige=True)
