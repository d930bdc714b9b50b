"""Link-graph measures over everything known (crawled pages and frontier): in-degree and PageRank."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
import scipy.sparse as sp


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


def link_measures(urls: pl.Series, links: pl.DataFrame) -> tuple[pl.DataFrame, PageRankFit]:
    """In-degree (distinct linking pages, self-links excluded) and PageRank of every URL in ``urls``.

    ``links`` has columns src, dst; edges to or from URLs outside ``urls`` are ignored.
    """
    ids = pl.DataFrame({"url": urls}).with_row_index("id")
    edges = (links.select("src", "dst").unique().filter(pl.col("src") != pl.col("dst"))
             .join(ids.rename({"url": "src", "id": "s"}), on="src")
             .join(ids.rename({"url": "dst", "id": "d"}), on="dst"))
    s = edges["s"].to_numpy().astype(np.int64)
    d = edges["d"].to_numpy().astype(np.int64)
    fit = pagerank(s, d, ids.height)
    indeg = np.bincount(d, minlength=ids.height)
    return ids.select("url").with_columns(in_links=pl.Series(indeg, dtype=pl.Int32),
                                           pagerank=pl.Series(fit.scores)), fit
