"""PageRank over the link graph of everything known (crawled pages and frontier)."""

from __future__ import annotations

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
    rank = np.full(n, 1.0 / n)
    residual = 0.0
    for it in range(1, max_iter + 1):
        new = damping * (m @ rank + rank[dangling].sum() / n) + (1.0 - damping) / n
        residual = float(np.abs(new - rank).sum())
        rank = new
        if residual < tol:
            return PageRankFit(rank, it, residual)
    return PageRankFit(rank, max_iter, residual)


def known_graph(con: duckdb.DuckDBPyConnection) -> tuple[int, np.ndarray, np.ndarray]:
    """Number the known URLs (temp table ``r_ids``: url, id; the caller drops it); return (n, src, dst) of the
    distinct links between them, as integer ids: a fraction of the memory of URL strings."""
    run_sql(con, "stages/link_ids")
    (edges_sql,) = statements("stages/link_graph")
    edges = con.sql(edges_sql).fetchnumpy()
    return scalar(con, "SELECT count(*) FROM r_ids"), edges["src"].astype(np.int64), edges["dst"].astype(np.int64)
