"""S'(p, q): the reference ranker's score predicted from what is known before a page is fetched.

Features of a (query, page) pair (``sql/impact/pair_features.sql``): the shares of the query's n-grams found
among the page's URL and anchor n-grams (all, URL only, anchors only), the query's term count, ln(1 + in-links),
ln(1 + PageRank x known URLs), and two host figures: ln(1 + crawled pages of the host) and the share of them
that some query of the cycle shows in its top K.

Each refit trains gradient-boosted trees (scikit-learn ``HistGradientBoostingRegressor``) on crawled pages,
where S is known: for up to ``s_prime_queries`` queries of the cycle's partition, up to ``PAIRS_PER_QUERY`` of
the crawled pages sharing an n-gram with the query (one found on at most ``PROPOSING_DF`` URLs). One query in
five is held out, and the model's error on it is stored in ``model_runs`` with the model file
(``<data_dir>/models/s_prime-<cycle>.pkl``).
Until a model exists, S' is 0: a matched frontier page then enters a sketch only where the query has fewer
than K crawled results.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from crawlcycle import ngram_index, ranker
from crawlcycle.db import query, run_sql
from crawlcycle.refit import record_model
from crawlcycle.settings import Settings

FEATURES = ["share", "url_share", "anchor_share", "query_terms", "log_in_links", "log_pagerank",
            "log_host_pages", "host_shown_share"]
PAIRS_PER_QUERY = 200
MIN_SHARE = 1e-9  # training pairs: any shared n-gram
PROPOSING_DF = 5000  # n-grams on more URLs than this propose no training pairs
MIN_PAIRS = 50  # fewer training pairs than this: no model this cycle
HOLDOUT = 5  # every fifth query is held out for validation


def stage_queries(queries: list[str]) -> pl.DataFrame:
    """(qid, query, query_terms) of distinct normalised queries, qid = position in sorted order."""
    frame = pl.DataFrame({"query": sorted(set(queries))}, schema={"query": pl.String}).with_row_index("qid")
    return frame.with_columns(query_terms=ranker.terms(pl.col("query")).list.n_unique().cast(pl.Int32))


def pair_features(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, queries: pl.DataFrame,
                  share: float, **limits: int) -> pl.DataFrame:
    """Features (one row per qid, url) of the pages of ``s_scope`` matching ``queries`` at ``share`` (``limits``:
    those of ``ngram_index.match``)."""
    pairs = ngram_index.match(con, settings, queries.select("qid", "query"), share, **limits)
    pairs = pairs.join(queries.select("qid", "query_terms"), on="qid")
    run_sql(con, "impact/host_stats", cycle=cycle)
    con.register("s_pairs", pairs)
    try:
        return query(con, "impact/pair_features")
    finally:
        con.unregister("s_pairs")


def fit(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Train S' on cycle ``cycle``'s crawled pages and record it; metrics say why when there is no model."""
    partition = con.sql("SELECT DISTINCT l.query FROM query_log l JOIN cycles c ON c.interval_start = l.partition "
                        "WHERE c.cycle = ? ORDER BY md5(l.query) LIMIT ?",
                        params=[cycle, settings.s_prime_queries]).pl()["query"].to_list()
    queries = stage_queries(partition)
    run_sql(con, "impact/training_scope")
    # Any shared n-gram makes a pair, so that the model also sees how partial matches score; n-grams on very many
    # URLs propose none (the sample would cost a scan of much of the crawl per query).
    pairs = pair_features(con, settings, cycle, queries, MIN_SHARE, per_query=PAIRS_PER_QUERY, max_df=PROPOSING_DF)
    scored = ranker.pair_scores(con, settings, queries["query"].to_list(), pairs.select("qid", "url"))
    data = pairs.join(scored, on=["qid", "url"]).sort("qid", "url")
    metrics: dict = {"queries": queries.height, "pairs": data.height}
    held_out = (pl.col("qid") % HOLDOUT) == 0
    train, valid = data.filter(~held_out), data.filter(held_out)
    if train.height < MIN_PAIRS or not valid.height:
        metrics["reason"] = f"too few training pairs ({train.height} train, {valid.height} validation)"
        record_model(con, cycle, "s_prime", FEATURES, metrics)
        return metrics
    from sklearn.ensemble import HistGradientBoostingRegressor  # slow to import: only where a fit runs

    model = HistGradientBoostingRegressor(max_iter=200, random_state=settings.random_seed, early_stopping=False)
    model.fit(train.select(FEATURES).to_numpy(), train["score"].to_numpy())
    truth, guess = valid["score"].to_numpy(), model.predict(valid.select(FEATURES).to_numpy())
    metrics.update(train_pairs=train.height, validation_pairs=valid.height, **_errors(truth, guess),
                   baseline_mae=float(np.mean(np.abs(truth - train["score"].mean()))))
    path = Path(settings.data_dir) / "models" / f"s_prime-{cycle:05d}.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(model))
    record_model(con, cycle, "s_prime", FEATURES, metrics, str(path))
    return metrics


def _errors(truth: np.ndarray, guess: np.ndarray) -> dict[str, float]:
    residual = truth - guess
    spread = float(np.sum((truth - truth.mean()) ** 2))
    return {"validation_mae": float(np.mean(np.abs(residual))),
            "validation_rmse": float(np.sqrt(np.mean(residual ** 2))),
            "validation_r2": 1 - float(np.sum(residual ** 2)) / spread if spread else 0.0}


def predict(con: duckdb.DuckDBPyConnection, cycle: int, features: pl.DataFrame) -> pl.Series:
    """S' of each row of ``features`` with the newest model trained up to ``cycle`` (0 without one)."""
    rows = con.execute("SELECT cycle, file FROM model_runs WHERE model = 's_prime' AND cycle <= ? "
                       "AND file IS NOT NULL ORDER BY cycle DESC LIMIT 1", [cycle]).fetchall()
    if not rows or not features.height:
        return pl.Series("s_prime", np.zeros(features.height))
    path = Path(rows[0][1])
    if not path.is_file():
        raise FileNotFoundError(f"S' model of cycle {rows[0][0]} is missing: {path} (re-run that cycle's refit)")
    model = pickle.loads(path.read_bytes())
    # rounded: replays must compare equal, and tree sums may differ in the last bits across thread counts
    return pl.Series("s_prime", np.round(model.predict(features.select(FEATURES).to_numpy()), 9))
