"""The top K the top-K odds learn a page must enter: read by identity, the crawl's own or raised by the frontier
(setting odds_bar), on hand-made result lists and on a real crawl of three sites of ../shared/corpus."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.models.score_model import top_k, with_bars
from tests.support.three_sites import simulate_three_sites


def _rows(qid: int, scores: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame({"qid": [qid] * len(scores), "url": list(scores), "score": list(scores.values())},
                        schema={"qid": pl.UInt32, "url": pl.String, "score": pl.Float64})


def test_the_crawled_top_k_is_read_by_identity_with_ties_by_url() -> None:
    # query 0: c and d tie at the third place; query 1 has fewer results than K
    results = pl.concat([_rows(0, {"a": 3.0, "d": 1.5, "b": 2.0, "c": 1.5}), _rows(1, {"e": 0.7})])
    members, bars = top_k(results, None, 3)
    assert members.rows() == [(0, 1, "a", 3.0, True), (0, 2, "b", 2.0, True), (0, 3, "c", 1.5, True),
                              (1, 1, "e", 0.7, True)]  # d loses its tie by URL, not by its last digits
    assert sorted(bars.rows()) == [(0, 1.5, 1.0), (1, 0.0, pytest.approx(1 / 3))]


def test_the_frontier_raises_the_bar_and_a_crawled_page_wins_a_tie() -> None:
    results = _rows(0, {"a": 3.0, "b": 2.0, "c": 1.0})
    frontier = _rows(0, {"x": 2.5, "y": 1.0, "z": 0.2})
    members, bars = top_k(results, frontier, 3)
    assert members.select("url", "crawled").rows() == [("a", True), ("x", False), ("b", True)]  # c falls out
    assert bars.rows() == [(0, 2.0, 1.0)]
    members, _ = top_k(_rows(0, {"a": 3.0, "c": 1.0}), frontier, 3)
    assert members["url"].to_list() == ["a", "x", "c"]  # c ties y at 1.0: the crawled page stays
    pairs = with_bars(pl.DataFrame({"qid": [0, 7]}, schema={"qid": pl.UInt32}), bars)
    assert pairs.select("bar", "result_share").rows() == [(2.0, 1.0), (0.0, 0.0)]  # a query with none: 0


@pytest.fixture(scope="module")
def crawls(three_sites: dict[str, Path], three_site_crawl: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Path]:
    """The crawl databases of hybrid over the three sites with each odds_bar: crawled (the default: the shared
    crawl) and frontier."""
    return {"crawled": three_site_crawl,
            "frontier": simulate_three_sites(three_sites, tmp_path_factory.mktemp("odds-bar"), 3, odds_bar="frontier")}


def test_odds_learnt_against_the_frontier_count_fewer_pages_in_and_steer_the_crawl(crawls: dict[str, Path]) -> None:
    share, odds = {}, {}
    for bar, db in crawls.items():
        with duckdb.connect(str(db), read_only=True) as con:
            fits = con.execute("SELECT cycle, metrics FROM model_runs WHERE model = 'top_k_odds' AND file IS NOT NULL "
                               "ORDER BY cycle").fetchall()
            odds[bar] = con.execute("SELECT avg(p_top_k) FROM top_k_odds WHERE cycle = 2").fetchone()[0]
        assert fits, f"{bar}: no odds model was fitted"
        share[bar] = {cycle: json.loads(m)["train_positive_share"] for cycle, m in fits}
    # the same pairs in the first fit (cycle 2 learns from the same crawl either way): fewer of them hold a place once
    # the frontier's candidates compete, so the odds a frontier page gets are lower
    assert share["frontier"][2] < share["crawled"][2]
    assert odds["frontier"] < odds["crawled"]
