"""The learned combination of orderings (Tran et al.): policy ``ml``.

Every page of the eligible frontier and every crawled page gets the other policies' scores as features: in-links,
scaled PageRank, query overlap, the q_hybrid score, and the ``rw`` and ``rw_eg`` walk scores. A decision tree
regression (scikit-learn) learns observed impact from them on the crawled pages; its depth and leaf size are
chosen by k-fold cross-validation (R²), and the folds' scores, the chosen tree's feature importances and the
training size go to ``model_runs`` (model ``ml``). The frontier is ordered by predicted impact, scaled to [0, 1];
within one leaf, where the tree predicts the same impact for many pages, the q_hybrid score breaks the tie.
With too few crawled pages to validate on, the q_hybrid score alone orders the frontier.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import run_sql, staged
from crawlcycle.models.prestige import observed_impact
from crawlcycle.models.refit import record_model
from crawlcycle.ordering import query_overlap, random_walk
from crawlcycle.settings import Settings

FEATURES = ["in_links", "pagerank", "overlap", "q_hybrid", "rw", "rw_eg"]
FOLDS = 5
MIN_PAGES = 20  # fewer crawled pages than this: too few for FOLDS folds to say anything
GRID = {"max_depth": [2, 3, 4, 6, 8], "min_samples_leaf": [1, 5, 20]}
TIE_BREAK = 1e-6  # weight of the q_hybrid score (in [0, 1]) added to the scaled prediction


def features(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> pl.DataFrame:
    """FEATURES (and url) of every page of the learning scope: eligible frontier and crawled pages."""
    run_sql(con, "ordering/ml/learning_scope")
    pages = query_overlap.scored_pages(con, settings, cycle)
    for name, enrich in (("rw", False), ("rw_eg", True)):
        random_walk.stage_walk(con, settings, cycle, enrich)
        walk = con.sql("SELECT url, score AS walk FROM s_walk").pl()
        pages = pages.join(walk, on="url", how="left").with_columns(pl.col("walk").fill_null(0.0).alias(name))
        pages = pages.drop("walk")
    return pages


def fit_predict(settings: Settings, pages: pl.DataFrame, crawled: pl.DataFrame) -> tuple[pl.Series, dict]:
    """Predicted impact of every row of ``pages`` from a cross-validated tree trained on ``crawled`` (url, impact),
    and the fit's metrics; without enough pages, the q_hybrid score and the reason."""
    # in URL order: the folds are drawn by row, and a join gives its rows in no defined order
    train = pages.join(crawled.select("url", "impact"), on="url").sort("url")
    metrics: dict = {"pages": train.height, "pages_with_impact": int((train["impact"] > 0).sum())}
    if train.height < MIN_PAGES or not metrics["pages_with_impact"]:
        metrics["reason"] = f"too little to learn from ({train.height} pages, {metrics['pages_with_impact']} " \
                            "with impact): ordered by q_hybrid"
        return pages["q_hybrid"], metrics
    from sklearn.model_selection import GridSearchCV, KFold  # slow to import: only where a fit runs
    from sklearn.tree import DecisionTreeRegressor

    folds = KFold(FOLDS, shuffle=True, random_state=settings.random_seed)
    search = GridSearchCV(DecisionTreeRegressor(random_state=settings.random_seed), GRID, cv=folds, scoring="r2")
    search.fit(train.select(FEATURES).to_numpy(), train["impact"].to_numpy())
    best = search.best_index_
    results = search.cv_results_
    metrics.update(
        folds=FOLDS, best_params=search.best_params_,
        cv_r2_mean=float(results["mean_test_score"][best]), cv_r2_std=float(results["std_test_score"][best]),
        cv_r2_folds=[float(results[f"split{k}_test_score"][best]) for k in range(FOLDS)],
        importances=dict(zip(FEATURES, search.best_estimator_.feature_importances_.round(6).tolist(), strict=True)))
    return pl.Series("predicted", search.predict(pages.select(FEATURES).to_numpy())), metrics


def stage_ml(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    """Fit, record and stage ``s_learned`` (url, priority, parts) for ``sql/ordering/policies/ml.sql``."""
    pages = features(con, settings, cycle)
    crawled, source = observed_impact(con, settings, cycle)
    predicted, metrics = fit_predict(settings, pages, crawled)
    record_model(con, cycle, "ml", FEATURES, {"impact_source": source, **metrics})
    top = float(np.max(predicted.to_numpy(), initial=0.0)) or 1.0
    scored = pages.with_columns(predicted=predicted).with_columns(
        priority=(pl.col("predicted") / top + TIE_BREAK * pl.col("q_hybrid")).round(12),
        parts=pl.struct(pl.col("predicted").round(9), *[pl.col(f).round(9) for f in FEATURES]))
    with staged(con, s_scored=scored.select("url", "priority", "parts")):
        run_sql(con, "ordering/ml/learned")
    # ml.sql: the query part of the priority while it is q_hybrid's (no tree fitted)
    return {"query_weight": settings.hybrid_query_weight, "tie_break": TIE_BREAK, "tree": "reason" not in metrics}
