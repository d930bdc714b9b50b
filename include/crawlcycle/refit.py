"""Refit the per-cycle models; each fit is recorded in ``model_runs`` with its metrics."""

from __future__ import annotations

import json

import duckdb

from crawlcycle.db import query, scalar
from crawlcycle.graph import link_measures


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
    rows = con.execute("SELECT metrics FROM model_runs WHERE model = ? AND cycle <= ? AND json_exists(metrics, ?) "
                       "ORDER BY cycle DESC LIMIT 1", [model, cycle, f"$.{key}"]).fetchall()
    return json.loads(rows[0][0]) if rows else None


def refit_link_graph(con: duckdb.DuckDBPyConnection, cycle: int) -> dict:
    """In-degree and PageRank of every known URL, stored on the frontier rows."""
    urls = con.sql("SELECT url FROM frontier ORDER BY url").pl()["url"]
    measures, fit = link_measures(urls, query(con, "stages/link_graph"))
    con.register("s_measures", measures)
    con.execute("UPDATE frontier f SET in_links = m.in_links, pagerank = m.pagerank "
                "FROM s_measures m WHERE f.url = m.url")
    con.unregister("s_measures")
    metrics = {"nodes": measures.height, "edges": int(measures["in_links"].sum()),
               "iterations": fit.iterations, "residual": fit.residual}
    record_model(con, cycle, "pagerank", ["links"], metrics)
    return metrics
