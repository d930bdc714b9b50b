"""Rival orderings on small hand-built crawl states in a real DuckDB file: the impact-weighted random walks
(rw, rw_eg) of Tran et al. and online page importance (opic)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from crawlcycle.db import connect
from crawlcycle.ordering import registry
from crawlcycle.pipeline import update
from crawlcycle.ranking import ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.crawl_state import DAY, add_links, add_urls, new_state


@pytest.fixture
def state(tmp_path: Path) -> Settings:
    return new_state(tmp_path, "rw")


def fetched(con: duckdb.DuckDBPyConnection, urls: list[str], cycle: int = 1) -> None:
    for url in urls:
        con.execute("INSERT INTO pages (url, host, cycle, status, title, text, content_hash) "
                    "VALUES (?, ?, ?, 200, 'a page', 'some words', ?)", [url, url.split("/")[2], cycle, url])
        con.execute("UPDATE frontier SET status = 'fetched', status_cycle = ? WHERE url = ?", [cycle, url])


def shown(con: duckdb.DuckDBPyConnection, views: dict[str, int]) -> None:
    """Impressions of the cycle's query-log partition: each URL shown at rank 1 this many times."""
    con.executemany("INSERT INTO query_log VALUES (?, 'q', 1.0, ?, ?, 1, false)",
                    [(DAY, f"2026-11-01 00:00:{i:02d}", url) for url, k in views.items() for i in range(k)])


def scores(s: Settings, policy: str, cycle: int = 1) -> dict[str, float]:
    with connect(s) as con:
        registry.score_frontier(con, replace(s, policy=policy), cycle)
        return dict(con.execute("SELECT url, priority FROM frontier_scores WHERE score_cycle = ?", [cycle]).fetchall())


def dense_walk(urls: list[str], links: list[tuple[str, str]], impact: dict[str, float], s: Settings,
               enrich: bool) -> dict[str, float]:
    """(1 - alpha)(I - alpha (omega M^T F + (1 - omega) M'^T F'))^-1 v, written out with dense matrices."""
    n, at = len(urls), {u: i for i, u in enumerate(urls)}
    a = np.zeros((n, n))
    for src, dst in links:
        a[at[src], at[dst]] = 1.0
    imp = np.array([impact.get(u, 0.0) for u in urls]) + s.rw_epsilon

    def factor_and_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        degree = w.sum(axis=1)
        rows = np.divide(w, w.sum(axis=1, keepdims=True), out=np.zeros_like(w), where=w.sum(axis=1, keepdims=True) > 0)
        return imp / imp.max() * (degree / degree.max()) ** s.rw_gamma, rows

    f, m = factor_and_rows(a)
    p = m.T @ np.diag(f)
    if enrich:
        w = a.T @ a
        np.fill_diagonal(w, 0.0)
        fv, mv = factor_and_rows(w)
        p = s.rw_omega * p + (1 - s.rw_omega) * mv.T @ np.diag(fv)
    x = (1 - s.rw_damping) * np.linalg.solve(np.eye(n) - s.rw_damping * p, np.full(n, 1.0 / n))
    return dict(zip(urls, x, strict=True))


@pytest.mark.parametrize("policy", ["rw", "rw_eg"])
def test_the_walk_reaches_the_linear_algebra_solution(state: Settings, policy: str) -> None:
    s = replace(state, rw_gamma=1.0, rw_omega=0.6)
    crawled = [f"http://d.test/{i}" for i in range(6)]
    frontier = [f"http://f.test/{i}" for i in range(5)]
    links = [(crawled[0], crawled[1]), (crawled[0], frontier[0]), (crawled[0], frontier[1]),
             (crawled[1], crawled[2]), (crawled[1], frontier[1]), (crawled[2], crawled[0]),
             (crawled[2], frontier[2]), (crawled[3], frontier[2]), (crawled[3], frontier[3]),
             (crawled[3], crawled[4]), (crawled[4], frontier[3]), (crawled[5], crawled[0]),
             (crawled[5], frontier[4]), (crawled[5], frontier[0])]
    views = {crawled[0]: 7, crawled[2]: 3, crawled[3]: 12, crawled[5]: 1}
    with connect(s) as con:
        add_urls(con, crawled + frontier)
        fetched(con, crawled)
        add_links(con, [(a, b, "link") for a, b in links])
        ranker.index_pages(con, 1)
        shown(con, views)
    got = scores(s, policy)
    want = dense_walk(sorted(crawled + frontier), links, views, s, enrich=policy == "rw_eg")
    assert set(got) == set(frontier)
    assert [got[u] for u in frontier] == pytest.approx([want[u] for u in frontier], rel=1e-8)
    with connect(s, read_only=True) as con:
        metrics = json.loads(con.execute("SELECT metrics FROM model_runs WHERE model = ?", [policy]).fetchall()[0][0])
    assert metrics["converged"] and 0 < metrics["iterations"] < 500 and metrics["impact_source"] == "views"
    # co-cited pairs, each weight 1: 3 under crawled[0], 1 under [1], 1 under [2], 3 under [3], 3 under [5]
    assert metrics["virtual_weight"] == (0 if policy == "rw" else 2 * 11)


def test_co_citation_with_a_high_impact_page_lifts_a_frontier_page(state: Settings) -> None:
    # y shares its only in-link with the much-viewed page t; x has two in-links from barely viewed pages.
    t, s1, s2, s3 = (f"http://d.test/{k}" for k in ("t", "s1", "s2", "s3"))
    x, y = "http://f.test/x", "http://f.test/y"
    with connect(state) as con:
        add_urls(con, [t, s1, s2, s3, x, y])
        fetched(con, [t, s1, s2, s3])
        add_links(con, [(s1, t, "t"), (s1, y, "y"), (s2, x, "x"), (s3, x, "x")])
        ranker.index_pages(con, 1)
        shown(con, {t: 50, s1: 1, s2: 1, s3: 1})
    walk, enriched = scores(state, "rw"), scores(state, "rw_eg")
    assert walk[x] > walk[y]
    assert enriched[y] > enriched[x]
    assert scores(replace(state, rw_omega=1.0), "rw_eg") == pytest.approx(walk, rel=1e-9)  # no virtual steps


def opic_state(s: Settings) -> list[tuple]:
    with connect(s, read_only=True) as con:
        return con.execute("SELECT cycle, url, cash, history FROM opic_cash ORDER BY ALL").fetchall()


def current(s: Settings) -> dict[str, tuple[float, float]]:
    with connect(s, read_only=True) as con:
        rows = con.execute("SELECT url, cash, history FROM opic_cash QUALIFY row_number() OVER "
                           "(PARTITION BY url ORDER BY cycle DESC) = 1").fetchall()
    return {u: (round(c, 12), round(h, 12)) for u, c, h in rows}


def test_opic_passes_cash_on_conserves_it_and_keeps_history(state: Settings) -> None:
    a, b, c, d = (f"http://o.test/{k}" for k in "abcd")
    with connect(state) as con:
        add_urls(con, [a, b])
    assert scores(state, "opic", 0) == {a: 0.5, b: 0.5}  # the first scoring: 1/n each
    with connect(state) as con:  # cycle 1: a is fetched and links to c and d
        add_urls(con, [c, d], 1)
        fetched(con, [a], 1)
        add_links(con, [(a, c, "c"), (a, d, "d")], 1)
    assert scores(state, "opic", 1) == {b: 0.5, c: 0.25, d: 0.25}
    assert current(state) == {a: (0, 0.5), b: (0.5, 0), c: (0.25, 0), d: (0.25, 0)}
    def crawl_cycle_2(con: duckdb.DuckDBPyConnection) -> None:  # b has no out-links: its cash goes to all four
        fetched(con, [b, c], 2)
        add_links(con, [(c, d, "d"), (c, a, "a")], 2)

    with connect(state) as con:
        crawl_cycle_2(con)
    assert scores(state, "opic", 2) == {d: pytest.approx(0.5)}
    assert current(state) == {a: (0.25, 0.5), b: (0.125, 0.5), c: (0.125, 0.25), d: (0.5, 0)}
    assert sum(cash for cash, _ in current(state).values()) == pytest.approx(1.0)

    # A replay of either cycle's scoring starts from the earlier cycles' rows and writes the same state.
    before = opic_state(state)
    scores(state, "opic", 1)
    scores(state, "opic", 2)
    assert opic_state(state) == before
    with connect(state) as con:  # a rolled-back cycle loses its rows; crawling and scoring it again restores them
        update.merge_shards(con, state, 2, [])  # the update stage's rollback, before it merges cycle 2 again
        assert con.execute("SELECT count(*) FROM opic_cash WHERE cycle = 2").fetchall() == [(0,)]
        crawl_cycle_2(con)
    scores(state, "opic", 2)
    assert opic_state(state) == before


def test_walk_settings_are_validated() -> None:
    base = {"user_agent": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"}
    for name, value in (("rw_damping", 1.0), ("rw_omega", 1.5), ("rw_epsilon", 0.0), ("rw_gamma", -1.0)):
        with pytest.raises(ValueError, match=f"setting {name}: must"):
            load_settings(overrides={**base, name: value}, environ={})
