"""Walks over the link graph of everything known (crawled pages and frontier): PageRank, and the power iteration
that other walks share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import scipy.sparse as sp

from crawlcycle.db import run_sql, scalar, statements


@dataclass(frozen=True)
class PageRankFit:
    scores: np.ndarray
    iterations: int
    residual: float


def pagerank(src: np.ndarray, dst: np.ndarray, n: int, damping: float = 0.85, tol: float = 1e-9,
             max_iter: int = 100) -> PageRankFit:
    """Power-iteration PageRank over edges src -> dst of nodes 0..n-1; dangling mass spread uniformly."""
    if n == 0:
        return PageRankFit(np.zeros(0), 0, 0.0)
    out_deg = np.bincount(src, minlength=n).astype(np.float64)
    weights = 1.0 / out_deg[src]
    # Column-stochastic transition matrix: M[dst, src] = 1 / outdeg(src).
    m = sp.csr_matrix((weights, (dst, src)), shape=(n, n))
    dangling = out_deg == 0
    return power_iteration(lambda x: m @ x + x[dangling].sum() / n, n, damping, tol, max_iter)


def power_iteration(step: Callable[[np.ndarray], np.ndarray], n: int, damping: float, tol: float,
                    max_iter: int) -> PageRankFit:
    """Iterate x = damping step(x) + (1 - damping) / n from the uniform vector until the L1 change is below
    ``tol`` (or ``max_iter`` steps)."""
    x = np.full(n, 1.0 / max(n, 1))
    residual = 0.0
    for it in range(1, max_iter + 1):
        new = damping * step(x) + (1.0 - damping) / max(n, 1)
        residual = float(np.abs(new - x).sum())
        x = new
        if residual < tol:
            return PageRankFit(x, it, residual)
    return PageRankFit(x, max_iter, residual)


def known_graph(con: duckdb.DuckDBPyConnection) -> tuple[int, np.ndarray, np.ndarray]:
    """Number the known URLs (temp table ``r_ids``: url, id; the caller drops it); return (n, src, dst) of the
    distinct links between them, as integer ids: a fraction of the memory of URL strings."""
    run_sql(con, "models/graph/link_ids")
    (edges_sql,) = statements("models/graph/link_graph")
    edges = con.sql(edges_sql).fetchnumpy()
    return scalar(con, "SELECT count(*) FROM r_ids"), edges["src"].astype(np.int64), edges["dst"].astype(np.int64)
