from pathlib import Path

import duckdb
import numpy as np

from crawlcycle.db import migrate
from crawlcycle.models.graph import pagerank
from crawlcycle.models.refit import refit_link_graph


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


def test_in_links_count_distinct_linking_pages_in_the_crawl_database(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "crawl.duckdb"))
    migrate(con)
    con.executemany("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source) "
                    "VALUES (?, 'h', 0, ?, 'seed')", [(u, i) for i, u in enumerate(["a", "b", "c", "x"])])
    # a -> b twice (two anchors), self-links, x -> b; x is then forgotten, so its link is not an edge
    con.executemany("INSERT INTO links (src, dst, anchor, cycle) VALUES (?, ?, ?, 1)",
                    [("a", "b", "one"), ("a", "b", "two"), ("b", "c", ""), ("c", "c", ""), ("b", "b", ""),
                     ("x", "b", "")])
    con.execute("DELETE FROM frontier WHERE url = 'x'")
    metrics = refit_link_graph(con, 1)
    rows = {u: (n, pr) for u, n, pr in con.execute("SELECT url, in_links, pagerank FROM frontier").fetchall()}
    assert {u: n for u, (n, _) in rows.items()} == {"a": 0, "b": 1, "c": 1}
    assert rows["c"][1] > rows["b"][1] > rows["a"][1] and metrics["edges"] == 2
