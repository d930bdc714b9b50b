"""S'(p, q): the reference ranker's score predicted from what is known before a page is fetched.

Features of a (query, page) pair (``sql/impact/pair_features.sql``), ``FEATURES`` (Pandey & Olston's kind): the
shares of the query's n-grams found among the page's URL and anchor n-grams (all, URL only, anchors only), the
query's term count, ln(1 + in-links), ln(1 + PageRank x known URLs), and two host figures: ln(1 + crawled pages of
the host) and the share of them that some query of the cycle shows in its top K. With ``match_mode = 'evidence'``
also ``EVIDENCE_FEATURES``: the page's BM25F score over its evidence (``evidence_index``), the share of the
query's terms in that evidence, whether one of the query's results links to it, and its inherited relevance: max
and mean S of the crawled pages linking to it, and ln(1 + their number).

Each refit trains gradient-boosted trees (scikit-learn ``HistGradientBoostingRegressor``) on crawled pages,
where S is known, for up to ``s_prime_queries`` queries of the cycle's partition. Training pairs are found the
way frontier pages are (over the crawled pages instead): ``ngram``, up to ``PAIRS_PER_QUERY`` pages sharing an
n-gram with the query (one found on at most ``PROPOSING_DF`` URLs); ``evidence``, the query's evidence
candidates. One query in five is held out; the model's error on it is stored in ``model_runs`` with the model
file (``<data_dir>/models/s_prime-<cycle>.pkl``) and, in ``evidence`` mode, the error of a model trained on
``FEATURES`` alone from the same pairs (``old_features_validation_mae``), so the gain is visible.
Until a model exists, S' is 0: a matched frontier page then enters a sketch only where the query has fewer
than K crawled results.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import fetch_rows, query, run_sql
from crawlcycle.models.refit import record_model
from crawlcycle.ranking import evidence_index, ngram_index, ranker
from crawlcycle.settings import Settings

FEATURES = ["share", "url_share", "anchor_share", "query_terms", "log_in_links", "log_pagerank",
            "log_host_pages", "host_shown_share"]
EVIDENCE_FEATURES = [*FEATURES, "evidence_score", "term_share", "via_results", "inherited_max", "inherited_mean",
                     "log_crawled_linkers"]
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
                  share: float, found: pl.DataFrame | None = None, **limits: int) -> pl.DataFrame:
    """Features (one row per qid, url) of the pages of ``s_scope`` matching ``queries``: by ``settings.match_mode``,
    their evidence candidates (``found`` when given: ``evidence_index.candidates``' result for them), or those
    holding ``share`` of a query's n-grams (``limits``: those of ``ngram_index.match``)."""
    if settings.match_mode == "evidence":
        pairs = evidence_candidates(con, settings, cycle, queries, found)
    else:
        pairs = ngram_index.match(con, settings, queries.select("qid", "query"), share, **limits)
    pairs = pairs.join(queries.select("qid", "query_terms"), on="qid")
    run_sql(con, "impact/host_stats", cycle=cycle)
    con.register("s_pairs", pairs)
    try:
        return query(con, "impact/pair_features")
    finally:
        con.unregister("s_pairs")


def evidence_candidates(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                        queries: pl.DataFrame, found: pl.DataFrame | None = None) -> pl.DataFrame:
    """The evidence candidates of ``queries`` among ``s_scope`` (``found`` when given) with their n-gram shares and
    inherited relevance."""
    if found is None:
        found = evidence_index.candidates(con, settings, cycle, queries.select("qid", "query"))
    con.register("s_candidates", found.select("qid", "seq"))
    con.register("s_query_grams", ngram_index.ngrams(queries, "qid", "query", settings.ngram_max))
    try:
        shares = query(con, "impact/ngram_shares")
    finally:
        con.unregister("s_candidates")
        con.unregister("s_query_grams")
    inherited = ranker.inherited_scores(con, settings, queries["query"].to_list(), found.select("qid", "seq"))
    return (found.join(shares, on=["qid", "seq"])
            .join(inherited, on=["qid", "seq"], how="left")
            .with_columns(pl.col("via_results").cast(pl.Float64),
                          pl.col("inherited_max", "inherited_mean").fill_null(0.0),
                          log_crawled_linkers=pl.col("crawled_linkers").fill_null(0).log1p())
            .drop("crawled_linkers"))


def fit(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Train S' on cycle ``cycle``'s crawled pages and record it; metrics say why when there is no model."""
    partition = query(con, "impact/training_queries", cycle=cycle, queries=settings.s_prime_queries)["query"].to_list()
    queries = stage_queries(partition)
    run_sql(con, "impact/training_scope")
    # n-gram mode: any shared n-gram makes a pair, so that the model also sees how partial matches score; n-grams
    # on very many URLs propose none (the sample would cost a scan of much of the crawl per query).
    pairs = pair_features(con, settings, cycle, queries, MIN_SHARE, per_query=PAIRS_PER_QUERY, max_df=PROPOSING_DF)
    scored = ranker.pair_scores(con, settings, queries["query"].to_list(), pairs.select("qid", "url"))
    data = pairs.join(scored, on=["qid", "url"]).sort("qid", "url")
    features = EVIDENCE_FEATURES if settings.match_mode == "evidence" else FEATURES
    metrics: dict = {"queries": queries.height, "pairs": data.height, "match_mode": settings.match_mode}
    held_out = (pl.col("qid") % HOLDOUT) == 0
    train, valid = data.filter(~held_out), data.filter(held_out)
    if train.height < MIN_PAIRS or not valid.height:
        metrics["reason"] = f"too few training pairs ({train.height} train, {valid.height} validation)"
        record_model(con, cycle, "s_prime", features, metrics)
        return metrics
    model = _train(settings, train, features)
    truth, guess = valid["score"].to_numpy(), model.predict(valid.select(features).to_numpy())
    metrics.update(train_pairs=train.height, validation_pairs=valid.height, **_errors(truth, guess),
                   baseline_mae=float(np.mean(np.abs(truth - train["score"].mean()))))
    if features != FEATURES:
        old = _train(settings, train, FEATURES).predict(valid.select(FEATURES).to_numpy())
        metrics.update({f"old_features_{k}": v for k, v in _errors(truth, old).items()})
    path = Path(settings.data_dir) / "models" / f"s_prime-{cycle:05d}.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(model))
    record_model(con, cycle, "s_prime", features, metrics, str(path))
    return metrics


def _train(settings: Settings, train: pl.DataFrame, features: list[str]) -> object:
    from sklearn.ensemble import HistGradientBoostingRegressor  # slow to import: only where a fit runs

    model = HistGradientBoostingRegressor(max_iter=100, random_state=settings.random_seed, early_stopping=False)
    return model.fit(train.select(features).to_numpy(), train["score"].to_numpy())


def _errors(truth: np.ndarray, guess: np.ndarray) -> dict[str, float]:
    residual = truth - guess
    spread = float(np.sum((truth - truth.mean()) ** 2))
    return {"validation_mae": float(np.mean(np.abs(residual))),
            "validation_rmse": float(np.sqrt(np.mean(residual ** 2))),
            "validation_r2": 1 - float(np.sum(residual ** 2)) / spread if spread else 0.0}


def error(con: duckdb.DuckDBPyConnection, cycle: int) -> float:
    """Validation RMSE of the model :func:`predict` uses at ``cycle`` (0 without one)."""
    rows = fetch_rows(con, "models/latest_s_prime", cycle=cycle)
    return float(rows[0][3]) if rows else 0.0


def predict(con: duckdb.DuckDBPyConnection, cycle: int, features: pl.DataFrame) -> pl.Series:
    """S' of each row of ``features`` with the newest model trained up to ``cycle`` (0 without one)."""
    rows = fetch_rows(con, "models/latest_s_prime", cycle=cycle)
    if not rows or not features.height:
        return pl.Series("s_prime", np.zeros(features.height))
    path, names = Path(rows[0][1]), rows[0][2]
    if not set(names) <= set(features.columns):  # trained in the other match_mode
        return pl.Series("s_prime", np.zeros(features.height))
    if not path.is_file():
        raise FileNotFoundError(f"S' model of cycle {rows[0][0]} is missing: {path} (re-run that cycle's refit)")
    model = pickle.loads(path.read_bytes())
    # rounded: replays must compare equal, and tree sums may differ in the last bits across thread counts
    return pl.Series("s_prime", np.round(model.predict(features.select(names).to_numpy()), 9))
