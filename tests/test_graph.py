import numpy as np
import polars as pl

from crawlcycle.graph import link_measures, pagerank


def _dense_pagerank(edges: list[tuple[int, int]], n: int, d: float = 0.85) -> np.ndarray:
    """PageRank by solving the linear system directly (dangling mass spread uniformly)."""
    m = np.zeros((n, n))
    out = np.zeros(n)
    for s, _ in edges:
        out[s] += 1
    for s, t in edges:
        m[t, s] += 1 / out[s]
    m[:, out == 0] = 1 / n
    g = d * m + (1 - d) / n
    vals, vecs = np.linalg.eig(g)
    v = np.real(vecs[:, np.argmax(np.real(vals))])
    return v / v.sum()


def test_pagerank_matches_the_stationary_distribution() -> None:
    edges = [(0, 1), (1, 2), (2, 0), (3, 2), (4, 2), (2, 4), (5, 1)]  # node 6 is isolated, 5 has no in-links
    src, dst = np.array(edges).T
    fit = pagerank(src, dst, 7, tol=1e-12, max_iter=500)
    assert np.allclose(fit.scores, _dense_pagerank(edges, 7), atol=1e-9)
    assert fit.iterations < 500 and abs(fit.scores.sum() - 1) < 1e-9


def test_link_measures_count_distinct_linking_pages_and_ignore_unknown_urls() -> None:
    urls = pl.Series(["a", "b", "c"])
    links = pl.DataFrame({"src": ["a", "a", "b", "c", "x", "b"], "dst": ["b", "b", "c", "c", "b", "b"]})
    measures, _ = link_measures(urls, links)
    got = dict(zip(measures["url"], measures["in_links"], strict=True))
    assert got == {"a": 0, "b": 1, "c": 1}  # duplicate a->b once, self-links and unknown x ignored
    pr = dict(zip(measures["url"], measures["pagerank"], strict=True))
    assert pr["c"] > pr["b"] > pr["a"]
