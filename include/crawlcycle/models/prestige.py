"""Prestige-based impact: what a page's link prestige alone says about the impact it will have.

Each refit fits a quadratic regression (degree-2 polynomial, scikit-learn) from scaled PageRank (PageRank x
known URLs, so 1 is an average page) and in-links to the impact observed on crawled pages
(``sql/models/prestige/observed_impact.sql``): times shown in the top K (or clicks, setting ``impact_signal``) when the
cycle's query-log partition has impressions, else the summed frequency of the queries whose reference top K
holds the page. Its coefficients and R² go to ``model_runs``. The hybrid policy evaluates the polynomial on
every frontier URL, floored at 0. Until a fit exists the prestige-based impact is the scaled PageRank itself.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import query, scalar, staged
from crawlcycle.models.refit import latest_metrics, record_model
from crawlcycle.ranking.query_log import page_impressions
from crawlcycle.settings import Settings

FEATURES = ["pagerank", "in_links"]
# Coefficient names of the polynomial, in scikit-learn's PolynomialFeatures order after the intercept.
TERMS = ["pagerank", "in_links", "pagerank^2", "pagerank in_links", "in_links^2"]
MIN_PAGES = 10


def observed_impact(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> tuple[pl.DataFrame, str]:
    """(url, pagerank, in_links, impact) of cycle ``cycle``'s crawled, indexed pages, and where the impact came from
    (views, clicks or ranker)."""
    partition = scalar(con, "SELECT interval_start FROM cycles WHERE cycle = ?", [cycle])
    shown = page_impressions(con, partition, settings.top_k)
    with staged(con, s_shown=shown.select("url", impact=settings.impact_signal)):
        pages = query(con, "models/prestige/observed_impact", cycle=cycle, partition=partition,
                      from_log=shown.height > 0)
    return pages, settings.impact_signal if shown.height else "ranker"


def fit(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Fit the regression on cycle ``cycle``'s crawled pages and record it."""
    pages, source = observed_impact(con, settings, cycle)
    metrics: dict = {"pages": pages.height, "impact_source": source,
                     "pages_with_impact": int((pages["impact"] > 0).sum())}
    if pages.height < MIN_PAGES or not metrics["pages_with_impact"]:
        metrics["reason"] = f"too little to learn from ({pages.height} pages, {metrics['pages_with_impact']} " \
                            "with impact)"
    else:
        from sklearn.linear_model import LinearRegression  # slow to import: only where a fit runs
        from sklearn.preprocessing import PolynomialFeatures

        x = PolynomialFeatures(degree=2, include_bias=False).fit_transform(pages.select(FEATURES).to_numpy())
        y = pages["impact"].to_numpy()
        model = LinearRegression().fit(x, y)
        metrics.update(intercept=float(model.intercept_), r2=float(model.score(x, y)),
                       coefficients=dict(zip(TERMS, np.asarray(model.coef_, dtype=float).tolist(), strict=True)))
    record_model(con, cycle, "prestige", FEATURES, metrics)
    return metrics


def coefficients(con: duckdb.DuckDBPyConnection, cycle: int) -> dict[str, float]:
    """SQL parameters b0 .. b22 of the newest fit up to ``cycle`` (b1 = 1, the rest 0, until one exists):
    impact = b0 + b1 pr + b2 in + b11 pr^2 + b12 pr in + b22 in^2."""
    m = latest_metrics(con, "prestige", cycle, "coefficients")
    c = m["coefficients"] if m else {"pagerank": 1.0}
    names = dict(zip(TERMS, ("b1", "b2", "b11", "b12", "b22"), strict=True))
    return {"b0": m["intercept"] if m else 0.0, **{names[t]: float(c.get(t, 0.0)) for t in TERMS}}
