"""Query improvability: how many new top-K results a query is expected to gain from one cycle's fetches.

After each cycle every ranked query's improvement is measured (``query_improvement``). Queries are
bucketed by the average score of their top-K before the cycle, the improvement is averaged per bucket,
and a log-linear curve ln(improvement) = a + b * score is fitted to the bucket means (scikit-learn).
Low-scoring (tail) queries are the ones new pages can still change, so b is expected to be negative.
Until two buckets with history exist, every query gets the ``improvability_prior`` setting.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import query, run_sql
from crawlcycle.models.refit import latest_metrics, record_model

BUCKETS = 10
# Bucket means of zero improvement are floored here before the log: they still pull the curve down.
FLOOR = 0.01


@dataclass(frozen=True)
class ImprovabilityFit:
    intercept: float
    slope: float

    def predict(self, avg_score: pl.Expr) -> pl.Expr:
        return (self.intercept + self.slope * avg_score).exp()


def measure(con: duckdb.DuckDBPyConnection, cycle: int) -> int:
    """Record this cycle's improvement per ranked query; return how many queries were measured."""
    run_sql(con, "models/improvability/measure_improvement", cycle=cycle)
    return con.execute("SELECT count(*) FROM query_improvement WHERE cycle = ?", [cycle]).fetchall()[0][0]


def fit(con: duckdb.DuckDBPyConnection, cycle: int) -> dict:
    """Fit the curve on all history up to ``cycle`` and record it in model_runs; metrics say why not when
    there is too little history."""
    hist = query(con, "models/improvability/improvement_history", cycle=cycle)
    metrics: dict = {"rows": hist.height}
    if hist.height:
        bucket = hist.select(pl.col("x").bin_quantiles(BUCKETS, labels=False)).to_series().to_numpy()
        xs, ys = hist["x"].to_numpy(), hist["y"].to_numpy()
        # means in NumPy over the rows in history order: a parallel group-by adds in thread order, and the last
        # digit would differ between two runs of the same cycle
        buckets = pl.DataFrame([{"x": float(xs[bucket == k].mean()), "y": float(ys[bucket == k].mean()),
                                 "n": int((bucket == k).sum())} for k in np.unique(bucket)]).sort("x")
        metrics["buckets"] = buckets.select("x", "y", "n").to_dicts()
        if buckets.height >= 2:
            from sklearn.linear_model import LinearRegression  # 2 s to import: only where a fit runs

            x = buckets["x"].to_numpy().reshape(-1, 1)
            y = np.log(np.maximum(buckets["y"].to_numpy(), FLOOR))
            model = LinearRegression().fit(x, y, sample_weight=buckets["n"].to_numpy())
            metrics.update(intercept=float(model.intercept_), slope=float(model.coef_[0]),
                           r2=float(model.score(x, y, sample_weight=buckets["n"].to_numpy())))
    record_model(con, cycle, "improvability", ["avg_topk_score"], metrics)
    return metrics


def latest_fit(con: duckdb.DuckDBPyConnection, cycle: int) -> ImprovabilityFit | None:
    """The newest usable fit recorded up to ``cycle``, or None (use the prior)."""
    m = latest_metrics(con, "improvability", cycle, "slope")
    return ImprovabilityFit(m["intercept"], m["slope"]) if m else None
