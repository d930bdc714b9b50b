"""Refit the per-cycle models; each fit is recorded in ``model_runs`` with its metrics."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import fetch_rows, run_sql, scalar, staged, transaction
from crawlcycle.models.graph import known_graph, pagerank


def record_model(con: duckdb.DuckDBPyConnection, cycle: int, model: str, features: list[str],
                 metrics: dict, file: str | None = None) -> int:
    """Store one fit; its version counts the fits of that model so far, this one included."""
    version = scalar(con, "SELECT count(*) + 1 FROM model_runs WHERE model = ? AND cycle < ?", [model, cycle])
    con.execute("DELETE FROM model_runs WHERE cycle = ? AND model = ?", [cycle, model])
    con.execute("INSERT INTO model_runs (cycle, model, version, features, metrics, file) VALUES (?, ?, ?, ?, ?, ?)",
                [cycle, model, version, features, json.dumps(metrics), file])
    return version


def latest_metrics(con: duckdb.DuckDBPyConnection, model: str, cycle: int, key: str) -> dict | None:
    """Metrics of the newest fit of ``model`` up to ``cycle`` that holds ``key`` (fits without it had too little
    data), or None."""
    rows = fetch_rows(con, "models/refit/latest_metrics", model=model, cycle=cycle, path=f"$.{key}")
    return json.loads(rows[0][0]) if rows else None


def refit_link_graph(con: duckdb.DuckDBPyConnection, cycle: int) -> dict:
    """In-degree (distinct linking pages) and PageRank of every known URL, stored on the frontier rows."""
    with transaction(con):
        n, src, dst = known_graph(con)
        fit = pagerank(src, dst, n)
        with staged(con, s_measures=pl.DataFrame({"id": np.arange(n), "in_links": np.bincount(dst, minlength=n),
                                                  "pagerank": fit.scores})):
            run_sql(con, "models/refit/link_measures")
        con.execute("DROP TABLE r_ids")
    metrics = {"nodes": n, "edges": len(src), "iterations": fit.iterations, "residual": fit.residual}
    record_model(con, cycle, "pagerank", ["links"], metrics)
    return metrics
