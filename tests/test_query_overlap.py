"""The query-overlap orderings and the learned combination (q_overlap, q_hybrid, ml) on a small hand-built crawl
state in a real DuckDB file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from crawlcycle.db import connect
from crawlcycle.ordering.ml import FEATURES, FOLDS, GRID
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings
from tests.support.crawl_state import DAY, add_links, add_page, add_urls, new_state


@pytest.fixture
def state(tmp_path: Path) -> Settings:
    return new_state(tmp_path, "hybrid", batch_size=1, needy_share=1.0)


HUB, TAIL, PLAIN, SPORTS = ("http://news.test/hub", "http://wiki.test/people/4711", "http://wiki.test/people/4712",
                            "http://sports.test/live")


def build(s: Settings, crawled_pages: int = 30) -> None:
    """Crawled football pages that all link to a hub, and each to the one at half its number, so that the
    short pages the ranker shows first also have the most PageRank; a blog links to a page named after a rare
    query, to a page about a frequent one, and to a page holding one word of a third."""
    crawled = [f"http://news.test/football/{i}" for i in range(crawled_pages)]
    with connect(s) as con:
        add_urls(con, crawled + [HUB, TAIL, PLAIN, SPORTS, "http://blog.test/notes"])
        for i, url in enumerate(crawled):
            add_page(con, url, "Football scores today", "football scores league results table " + "goal " * i)
        add_page(con, "http://blog.test/notes", "Notes", "reading list")
        add_links(con, [(src, HUB, "home") for src in crawled] + [(crawled[i], crawled[i // 2], "more")
                                                                    for i in range(1, crawled_pages)]
                  + [("http://blog.test/notes", TAIL, "Judy Inklesmurf biography"),
                     ("http://blog.test/notes", PLAIN, "another league person"),
                     ("http://blog.test/notes", SPORTS, "football scores live")])
        con.executemany("INSERT INTO query_log (partition, query, frequency) VALUES (?, ?, ?)",
                        [(DAY, "football scores", 1000.0), (DAY, "judy inklesmurf", 3.0), (DAY, "league goal", 40.0)])


def score(s: Settings, policy: str) -> dict[str, tuple[float, dict]]:
    s = replace(s, policy=policy, batch_size=4)
    stages.refit_models(s, 1)
    stages.select_needy(s, 1)
    stages.score(s, 1)
    stages.materialize(s, 1)
    with connect(s, read_only=True) as con:
        return {u: (p, json.loads(parts)) for u, p, parts in
                con.execute("SELECT url, priority, parts FROM frontier_scores WHERE score_cycle = 1").fetchall()}


def _model(con: duckdb.DuckDBPyConnection, model: str) -> dict:
    return json.loads(con.execute("SELECT metrics FROM model_runs WHERE model = ? AND cycle = 1",
                                  [model]).fetchall()[0][0])


def test_q_overlap_sums_the_frequency_of_the_queries_a_page_matches(state: Settings) -> None:  # noqa: F811
    build(state)
    scores = score(state, "q_overlap")
    assert {u: p for u, (p, _) in scores.items()} == {SPORTS: 1000.0, TAIL: 3.0, HUB: 0.0, PLAIN: 0.0}
    assert scores[SPORTS][1]["queries"] == ["football scores"]
    # the priority is all query part: both engagement keys are the overlap
    assert all(parts["query_impact"] == parts["query_priority"] == p for p, parts in scores.values())
    # "league" is one of the three n-grams of "league goal": at rho = 0.3 that page matches with a third of them
    partial = score(replace(state, match_share=0.3), "q_overlap")
    assert {u: p for u, (p, _) in partial.items()} == {SPORTS: 1000.0, TAIL: 3.0, HUB: 0.0,
                                                       PLAIN: pytest.approx(40.0 / 3)}


def test_q_hybrid_adds_a_pagerank_tree_to_the_overlap(state: Settings) -> None:  # noqa: F811
    build(state)
    scores = score(state, "q_hybrid")
    with connect(state, read_only=True) as con:
        tree = _model(con, "q_hybrid_tree")
    assert tree["pages"] == 31 and tree["leaves"] >= 1 and "r2" in tree
    # overlap dominates (weight 0.9), and the hub, which matches no query, is ahead of the page nothing names
    assert max(scores, key=lambda u: scores[u][0]) == SPORTS
    assert scores[HUB][0] > scores[PLAIN][0]
    prestige = {u: parts["prestige_impact"] for u, (_, parts) in scores.items()}
    top_prestige = max(prestige.values())
    for url, (priority, parts) in scores.items():
        expected = 0.9 * parts["overlap"] / 1000.0 + 0.1 * (prestige[url] / top_prestige if top_prestige else 0)
        assert priority == pytest.approx(expected, abs=1e-9)
        # engagement keys: the overlap, and the weighted query part (the rest of the priority is prestige's)
        assert parts["query_impact"] == parts["overlap"]
        assert parts["query_priority"] == pytest.approx(0.9 * parts["overlap"] / 1000.0, abs=1e-12)
        assert priority - parts["query_priority"] == pytest.approx(
            0.1 * (prestige[url] / top_prestige if top_prestige else 0), abs=1e-9)


def test_ml_cross_validates_a_tree_over_the_other_scores(state: Settings) -> None:  # noqa: F811
    build(state)
    scores = score(state, "ml")
    with connect(state, read_only=True) as con:
        fit = _model(con, "ml")
        batch = con.execute("SELECT url FROM batches WHERE fetch_cycle = 2 ORDER BY rank").fetchall()
    assert fit["pages"] == 31 and fit["folds"] == FOLDS and len(fit["cv_r2_folds"]) == FOLDS
    assert set(fit["importances"]) == set(FEATURES) and sum(fit["importances"].values()) == pytest.approx(1.0)
    assert {k: fit["best_params"][k] in GRID[k] for k in GRID} == {k: True for k in GRID}
    # a tree's prediction does not split into parts: the query signal is there, no query part of the priority
    assert set(scores[SPORTS][1]) == {"predicted", *FEATURES, "query_impact"}
    assert all(parts["query_impact"] == parts["overlap"] for _, parts in scores.values())
    ranked = [u for u in sorted(scores, key=lambda u: (-scores[u][0], u)) if (u,) in batch]
    assert batch and [u for (u,) in batch] == ranked


def test_ml_falls_back_to_q_hybrid_without_enough_crawled_pages(state: Settings) -> None:  # noqa: F811
    build(state, crawled_pages=5)
    scores = score(state, "ml")
    with connect(state, read_only=True) as con:
        assert "too little to learn from (6 pages" in _model(con, "ml")["reason"]
    hybrid = score(state, "q_hybrid")
    assert sorted(scores, key=lambda u: -scores[u][0]) == sorted(hybrid, key=lambda u: -hybrid[u][0])
    assert {u: scores[u][1]["predicted"] for u in scores} == {u: pytest.approx(hybrid[u][0], abs=1e-8)
                                                              for u in hybrid}
    # ordered by q_hybrid, the priority's query part is q_hybrid's, scaled as the priority is
    top = max(h for h, _ in hybrid.values())
    for url, (priority, parts) in scores.items():
        assert parts["query_impact"] == parts["overlap"] == hybrid[url][1]["overlap"]
        assert parts["query_priority"] == pytest.approx(hybrid[url][1]["query_priority"] * priority / hybrid[url][0]
                                                        if hybrid[url][0] else 0.0, abs=1e-9)
        assert parts["query_priority"] == pytest.approx(hybrid[url][1]["query_priority"] * (1 / top + 1e-6),
                                                        abs=1e-9)
