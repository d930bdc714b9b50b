"""S'(p, q): the reference ranker's score predicted from what is known before a page is fetched.

Features of a (query, page) pair (``sql/models/score_model/pair_features.sql``), ``FEATURES`` (Pandey & Olston's
kind): the shares of the query's n-grams found among the page's URL and anchor n-grams (all, URL only, anchors
only), the query's term count, ln(1 + in-links), ln(1 + PageRank x known URLs), and two host figures: ln(1 +
crawled pages of the host) and the share of them that some query of the cycle shows in its top K. With ``match_mode
= 'evidence'`` also ``EVIDENCE_FEATURES``: the page's BM25F score over its evidence (``evidence_index``), the share
of the query's terms in that evidence, whether one of the query's results links to it, and its inherited relevance:
max and mean S of the crawled pages linking to it, and ln(1 + their number).

Each refit trains gradient-boosted trees (scikit-learn ``HistGradientBoostingRegressor``) on crawled pages,
where S is known, for up to ``s_prime_queries`` queries of the cycle's partition. Training pairs are found the
way frontier pages are (over the crawled pages instead): ``ngram``, up to ``PAIRS_PER_QUERY`` pages sharing an
n-gram with the query (one found on at most ``PROPOSING_DF`` URLs); ``evidence``, the query's evidence
candidates. One query in five is held out; the model's error on it is stored in ``model_runs`` with the model
file (``<data_dir>/models/s_prime-<cycle>.pkl``) and, in ``evidence`` mode, the error of a model trained on
``FEATURES`` alone from the same pairs (``old_features_validation_mae``), so the gain is visible. With
``semantic_match`` on, the pair also has that feature (``semantic_match``, the best cosine between the query's
sentence embedding and those of the page's URL words and anchor texts) and ``no_semantic_validation_mae`` is the
error without it.
Until a model exists, S' is 0: a matched frontier page then enters a sketch only where the query has fewer
than K crawled results.

The same refit trains the **top-K odds** (``model_runs.model = 'top_k_odds'``): gradient-boosted trees classifying
whether a pair's page enters its query's top K, that is scores above 0 and at least the query's bar (the K-th
best S of its crawled results; 0 while it has fewer than K), from the same features plus the bar and how full the
top K is (``BAR_FEATURES``). Its calibration on the held-out queries is stored with it: the Brier score, next to
those of always guessing the training share and of S' read as a normal distribution around the bar (its
validation RMSE as spread), and the hit rate by decile of the predicted odds.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import RANK_DIGITS, fetch_rows, query, run_sql, staged
from crawlcycle.models.refit import record_model
from crawlcycle.ranking import evidence_index, ngram_index, ranker, semantic_match
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
BAR_FEATURES = ["log_bar", "result_share"]


def feature_names(settings: Settings) -> list[str]:
    """The features S' learns from under ``settings``."""
    if settings.match_mode != "evidence":
        return FEATURES
    return [*EVIDENCE_FEATURES, "semantic_match"] if settings.semantic_match else EVIDENCE_FEATURES


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
    if settings.match_mode == "evidence" and settings.semantic_match:
        pairs = pairs.with_columns(semantic_match.scores(con, pairs, queries))
    run_sql(con, "models/score_model/host_stats", cycle=cycle)
    with staged(con, s_pairs=pairs):
        return query(con, "models/score_model/pair_features")


def crawled_results(con: duckdb.DuckDBPyConnection, cycle: int, queries: pl.DataFrame) -> pl.DataFrame:
    """(qid, url, score): the reference top K in cycle ``cycle`` of ``queries`` (qid, query), its crawled results."""
    results = query(con, "models/score_model/crawled_results", cycle=cycle)
    return results.join(queries.select("qid", "query"), on="query").select("qid", "url", "score")


def top_k(results: pl.DataFrame, frontier: pl.DataFrame | None, k: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each query's top ``k`` of its crawled results (qid, url, score: S) and, when given, of its frontier candidates
    (qid, url, score: S'), by score at ``RANK_DIGITS`` digits, a crawled page first and then the lower URL on a tie
    (a needy query's *sketch*):
    the members (qid, rank, url, score, crawled) and the query's bar and result_share (qid, bar, result_share: its
    k-th score, 0 while it has fewer; how full it is). Membership is read by identity, never by comparing a score
    with the bar: two sums of the same S may differ in their last digit, and the page that sets the bar would then
    enter or not by chance."""
    rows = results.select("qid", "url", "score", crawled=pl.lit(True))
    if frontier is not None:
        rows = pl.concat([rows, frontier.select("qid", "url", "score", crawled=pl.lit(False))])
    members = (rows.sort(["qid", pl.col("score").round_sig_figs(RANK_DIGITS), "crawled", "url"],
                         descending=[False, True, True, False])
               .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("qid"))
               .filter(pl.col("rank") <= k))
    bars = members.group_by("qid").agg(bar=pl.when(pl.len() >= k).then(pl.col("score").min()).otherwise(0.0),
                                       result_share=pl.len() / k)
    return members.select("qid", "rank", "url", "score", "crawled"), bars


def with_bars(pairs: pl.DataFrame, bars: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (qid, ...) with their query's ``BAR_FEATURES`` and bar (:func:`top_k`; 0 for a query without one)."""
    return (pairs.join(bars, on="qid", how="left").with_columns(pl.col("bar", "result_share").fill_null(0.0))
            .with_columns(log_bar=pl.col("bar").log1p()))


def evidence_candidates(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                        queries: pl.DataFrame, found: pl.DataFrame | None = None) -> pl.DataFrame:
    """The evidence candidates of ``queries`` among ``s_scope`` (``found`` when given) with their n-gram shares and
    inherited relevance."""
    if found is None:
        found = evidence_index.candidates(con, settings, cycle, queries.select("qid", "query"))
    with staged(con, s_candidates=found.select("qid", "seq"),
                s_query_grams=ngram_index.ngrams(queries, "qid", "query", settings.ngram_max)):
        shares = query(con, "ranking/ngram_index/ngram_shares")
    inherited = ranker.inherited_scores(con, settings, queries["query"].to_list(), found.select("qid", "seq"))
    return (found.join(shares, on=["qid", "seq"])
            .join(inherited, on=["qid", "seq"], how="left")
            .with_columns(pl.col("via_results").cast(pl.Float64),
                          pl.col("inherited_max", "inherited_mean").fill_null(0.0),
                          log_crawled_linkers=pl.col("crawled_linkers").fill_null(0).log1p())
            .drop("crawled_linkers"))


def fit(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Train S' on cycle ``cycle``'s crawled pages and record it; metrics say why when there is no model."""
    partition = query(con, "models/score_model/training_queries", cycle=cycle,
                      queries=settings.s_prime_queries)["query"].to_list()
    queries = stage_queries(partition)
    run_sql(con, "models/score_model/training_scope")
    features = feature_names(settings)
    held_out = (pl.col("qid") % HOLDOUT) == 0
    drift, checked = _drift(con, settings, cycle, queries.filter(held_out), features)
    if drift.get("kept"):
        return _keep(con, cycle, features, {"queries": queries.height, "match_mode": settings.match_mode, **drift})
    if checked is None:
        data = _training_pairs(con, settings, cycle, queries)
    else:  # the check's pairs are the held-out queries' own: only the others' are new
        data = pl.concat([checked, _training_pairs(con, settings, cycle, queries.filter(~held_out))]).sort("qid", "url")
    metrics: dict = {"queries": queries.height, "pairs": data.height, "match_mode": settings.match_mode}
    if drift:  # why the model kept until now was not kept
        metrics["drift_check"] = drift
    train, valid = data.filter(~held_out), data.filter(held_out)
    if train.height < MIN_PAIRS or not valid.height:
        metrics["reason"] = f"too few training pairs ({train.height} train, {valid.height} validation)"
        record_model(con, cycle, "s_prime", features, metrics)
        return metrics
    model = _train(settings, train, features)
    truth, guess = valid["score"].to_numpy(), model.predict(valid.select(features).to_numpy())
    metrics.update(train_pairs=train.height, validation_pairs=valid.height, **_errors(truth, guess),
                   baseline_mae=float(np.mean(np.abs(truth - train["score"].mean()))))
    # what the newer features add: the same pairs learnt without them
    for label, fewer in (("old_features", FEATURES), ("no_semantic", EVIDENCE_FEATURES)):
        if len(fewer) < len(features):
            guess_without = _train(settings, train, fewer).predict(valid.select(fewer).to_numpy())
            metrics.update({f"{label}_{k}": v for k, v in _errors(truth, guess_without).items()})
    record_model(con, cycle, "s_prime", features, metrics, _save(settings, "s_prime", cycle, model))
    # the odds learn which pairs' pages are among their query's top K: the crawl's own, or (odds_bar = frontier)
    # that top K against the query's frontier candidates by the S' just fitted, as the live results will be
    frontier = None
    if settings.odds_bar == "frontier":
        run_sql(con, "models/score_model/frontier_scope")
        found = pair_features(con, settings, cycle, queries, settings.match_share)
        frontier = found.select("qid", "url", score=_predicted(model, found, features))
    members, bars = top_k(crawled_results(con, cycle, queries), frontier, settings.top_k)
    hit = members.select("qid", "url", hit=pl.lit(True))
    train, valid = ((with_bars(frame, bars).join(hit, on=["qid", "url"], how="left")
                     .with_columns(pl.col("hit").fill_null(False))) for frame in (train, valid))
    _fit_odds(con, settings, cycle, train, valid.with_columns(s_prime=guess), [*features, *BAR_FEATURES],
              metrics["validation_rmse"])
    return metrics


def _training_pairs(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                    queries: pl.DataFrame) -> pl.DataFrame:
    """Features and S (``score``) of the crawled pages matching ``queries`` (some of :func:`stage_queries`' rows), by
    their qid and url. A pair's features and S read only its own query's terms, so the pairs of a part of the
    queries are the part of theirs."""
    staged_queries = stage_queries(queries["query"].to_list())  # qid = position, as pair_scores wants
    # n-gram mode: any shared n-gram makes a pair, so that the model also sees how partial matches score; n-grams
    # on very many URLs propose none (the sample would cost a scan of much of the crawl per query).
    pairs = pair_features(con, settings, cycle, staged_queries, MIN_SHARE, per_query=PAIRS_PER_QUERY,
                          max_df=PROPOSING_DF)
    scored = ranker.pair_scores(con, settings, staged_queries["query"].to_list(), pairs.select("qid", "url"))
    qids = staged_queries.select("qid", "query").join(queries.select("query", given="qid"), on="query")
    return (pairs.join(scored, on=["qid", "url"]).join(qids.select("qid", "given"), on="qid")
            .with_columns(qid=pl.col("given")).drop("given").sort("qid", "url"))


def _drift(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, held_out: pl.DataFrame,
           features: list[str]) -> tuple[dict, pl.DataFrame | None]:
    """With ``recompute = changed``, whether the S' in use may be kept this cycle: its age, and its error on this
    cycle's pairs of the ``held_out`` queries (which it never learnt from) against its error when trained, the gain
    in the units of what guessing those pairs' mean score would miss (``drift``: the share of the scores' spread
    that S' explained when trained and explains no more). ``kept`` when both are within bounds; {} without a model
    to keep (none yet, other features, or ``recompute = full``). And the held-out pairs when it computed them."""
    rows = _in_use(con, "s_prime", cycle)
    if settings.recompute != "changed" or not rows or list(rows[0][2]) != features:
        return {}, None
    fitted = json.loads(rows[0][3])
    trained = fitted.get("trained_cycle", rows[0][0])
    out = {"trained_cycle": trained, "age": cycle - trained, "kept": False}
    if out["age"] >= settings.refit_max_age:
        return out, None
    data = _training_pairs(con, settings, cycle, held_out)
    if not data.height:
        return out, data
    model = _load("s_prime", rows[0])
    truth = data["score"].to_numpy()
    error = float(np.mean(np.abs(truth - model.predict(data.select(features).to_numpy()))))
    spread = float(np.mean(np.abs(truth - truth.mean())))
    trained_error = fitted.get("trained_validation_mae", fitted.get("validation_mae"))
    drift = (error - trained_error) / spread if spread else float("inf")
    return {**out, "trained_validation_mae": trained_error, "validation_mae": error, "baseline_mae": spread,
            "validation_pairs": data.height, "drift": drift, "kept": drift <= settings.refit_drift}, data


def _in_use(con: duckdb.DuckDBPyConnection, name: str, cycle: int) -> list[tuple]:
    """The saved fit of model ``name`` that scored the batch cycle ``cycle`` fetched (cycle, file, features,
    metrics), or no row."""
    score_cycle, _ = batch_cycles(fetch=cycle)
    return fetch_rows(con, "models/score_model/latest_saved", model=name, cycle=score_cycle)


def _keep(con: duckdb.DuckDBPyConnection, cycle: int, features: list[str], metrics: dict) -> dict:
    """Record the newest S' and top-K odds again for cycle ``cycle``, with ``metrics`` (the drift check's)."""
    (kept,) = _in_use(con, "s_prime", cycle)
    record_model(con, cycle, "s_prime", features, metrics, kept[1])
    odds = _in_use(con, "top_k_odds", cycle)
    if odds:  # its calibration stays that of its training
        fitted = json.loads(odds[0][3])
        record_model(con, cycle, "top_k_odds", list(odds[0][2]),
                     {**fitted, "trained_cycle": fitted.get("trained_cycle", odds[0][0])}, odds[0][1])
    return metrics


def _save(settings: Settings, name: str, cycle: int, model: object) -> str:
    path = Path(settings.data_dir) / "models" / f"{name}-{cycle:05d}.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(model))
    return str(path)


def _fit_odds(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, train: pl.DataFrame,
              valid: pl.DataFrame, features: list[str], rmse: float) -> None:
    """Train and record the top-K odds on the pairs S' learnt from (``valid`` also holds S' of each pair)."""
    from scipy.special import ndtr  # the normal CDF
    from sklearn.ensemble import HistGradientBoostingClassifier

    hit, hit_valid = train["hit"].to_numpy(), valid["hit"].to_numpy()
    metrics: dict = {"train_pairs": train.height, "validation_pairs": valid.height,
                     "train_positive_share": float(hit.mean())}
    if hit.all() or not hit.any():
        metrics["reason"] = "the training pairs all entered their query's top K, or none did"
        record_model(con, cycle, "top_k_odds", features, metrics)
        return
    model = HistGradientBoostingClassifier(max_iter=100, random_state=settings.random_seed, early_stopping=False)
    model.fit(train.select(features).to_numpy(), hit)
    odds = model.predict_proba(valid.select(features).to_numpy())[:, 1]
    # S' as a normal distribution around its estimate: the odds it clears the bar (and 0)
    gap = valid["s_prime"].to_numpy() - np.maximum(valid["bar"].to_numpy(), 0.0)
    s_prime_odds = ndtr(gap / rmse) if rmse > 0 else (gap > 0).astype(float)
    metrics.update(validation_positive_share=float(hit_valid.mean()), brier=_brier(odds, hit_valid),
                   brier_base_rate=_brier(np.full(len(odds), hit.mean()), hit_valid),
                   brier_s_prime=_brier(s_prime_odds, hit_valid), reliability=_reliability(odds, hit_valid))
    record_model(con, cycle, "top_k_odds", features, metrics, _save(settings, "top_k_odds", cycle, model))


def _brier(odds: np.ndarray, hit: np.ndarray) -> float:
    return float(np.mean((odds - hit) ** 2))


def _reliability(odds: np.ndarray, hit: np.ndarray) -> list[dict]:
    """Per decile of the predicted odds (0-0.1, ..., 0.9-1): pairs, their mean odds and the share that entered."""
    decile = np.minimum((odds * 10).astype(int), 9)
    return [{"decile": int(d), "pairs": int((decile == d).sum()),
             "mean_odds": round(float(odds[decile == d].mean()), 4),
             "hit_rate": round(float(hit[decile == d].mean()), 4)} for d in np.unique(decile)]


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


def _saved(con: duckdb.DuckDBPyConnection, name: str, cycle: int, features: pl.DataFrame) -> tuple | None:
    """The newest saved fit of model ``name`` up to ``cycle`` and its feature names, or None without one (or one
    trained on features ``features`` lacks: the other match_mode)."""
    rows = fetch_rows(con, "models/score_model/latest_saved", model=name, cycle=cycle)
    if not rows or not features.height or not set(rows[0][2]) <= set(features.columns):
        return None
    return _load(name, rows[0]), rows[0][2]


def _load(name: str, row: tuple) -> object:
    """The model a ``latest_saved.sql`` row names."""
    path = Path(row[1])
    if not path.is_file():
        raise FileNotFoundError(f"{name} model of cycle {row[0]} is missing: {path} (re-run that cycle's refit)")
    return pickle.loads(path.read_bytes())


def predict(con: duckdb.DuckDBPyConnection, cycle: int, features: pl.DataFrame) -> pl.Series:
    """S' of each row of ``features`` with the newest model trained up to ``cycle`` (0 without one)."""
    saved = _saved(con, "s_prime", cycle, features)
    if saved is None:
        return pl.Series("s_prime", np.zeros(features.height))
    model, names = saved
    return _predicted(model, features, names)


def _predicted(model: object, features: pl.DataFrame, names: list[str]) -> pl.Series:
    # rounded: replays must compare equal, and tree sums may differ in the last bits across thread counts
    return pl.Series("s_prime", np.round(model.predict(features.select(names).to_numpy()), 9))


def predict_odds(con: duckdb.DuckDBPyConnection, cycle: int, features: pl.DataFrame) -> pl.Series | None:
    """The odds that each row's page enters its query's top K, by the newest top-K odds model up to ``cycle``;
    None without one."""
    saved = _saved(con, "top_k_odds", cycle, features)
    if saved is None:
        return None
    model, names = saved
    return pl.Series("p_top_k", np.round(model.predict_proba(features.select(names).to_numpy())[:, 1], 6))
