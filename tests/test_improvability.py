"""Improvability measurement, its log-linear fit, and neediness on a real DuckDB file."""

from __future__ import annotations

import json
from datetime import date

import polars as pl

from crawlcycle.db import connect, migrate
from crawlcycle.models import improvability
from crawlcycle.ordering.needy_queries import select_needy
from crawlcycle.settings import Settings


def test_improvement_counts_top_k_results_fetched_in_the_cycle(settings: Settings) -> None:
    with connect(settings) as con:
        migrate(con)
        con.execute("INSERT INTO pages (url, host, cycle) VALUES ('http://a.test/old', 'a.test', 1), "
                    "('http://a.test/new1', 'a.test', 2), ('http://a.test/new2', 'a.test', 2)")
        con.execute("INSERT INTO query_results VALUES (1, 'q', 1, 'http://a.test/old', 2.0, 'reference'), "
                    "(2, 'q', 1, 'http://a.test/new1', 5.0, 'reference'), "
                    "(2, 'q', 2, 'http://a.test/old', 2.0, 'reference'), "
                    "(2, 'r', 1, 'http://a.test/new2', 3.0, 'reference')")
        assert improvability.measure(con, 2) == 2
        rows = con.execute("SELECT query, prior_avg_score, improvement FROM query_improvement ORDER BY query")
        assert rows.fetchall() == [("q", 2.0, 1), ("r", 0.0, 1)]


def _history(con, rows: list[tuple[int, str, float, int]]) -> None:
    con.executemany("INSERT INTO query_improvement VALUES (?, ?, ?, ?)", rows)


def test_fit_learns_that_low_scoring_queries_improve_more(settings: Settings) -> None:
    with connect(settings) as con:
        migrate(con)
        assert "slope" not in improvability.fit(con, 1)  # no history: the prior is used
        assert improvability.latest_fit(con, 1) is None
        # Improvement halves for every extra point of prior score: ln y = ln 8 - ln 2 * x.
        _history(con, [(c, f"q{c}-{x}", float(x), 8 // 2 ** x) for c in (1, 2) for x in range(4)])
        metrics = improvability.fit(con, 2)
        fitted = improvability.latest_fit(con, 2)
        stored = json.loads(con.execute("SELECT metrics FROM model_runs WHERE model = 'improvability' "
                                        "AND cycle = 2").fetchall()[0][0])
    assert abs(metrics["slope"] + 0.6931) < 1e-3 and metrics["r2"] > 0.999 and stored == metrics
    predicted = pl.DataFrame({"avg_score": [0.0, 3.0]}).select(fitted.predict(pl.col("avg_score")))
    assert abs(predicted.item(0, 0) - 8) < 1e-2 and abs(predicted.item(1, 0) - 1) < 1e-2


def test_needy_queries_favour_improvable_tail_queries_once_fitted(settings: Settings) -> None:
    day = date(2026, 11, 5)
    with connect(settings) as con:
        migrate(con)
        con.execute("INSERT INTO query_log (partition, query, frequency) VALUES (?, 'head query', 100), "
                    "(?, 'tail query', 30)", [day, day])
        con.execute("INSERT INTO query_results VALUES (3, 'head query', 1, 'http://a.test/x', 9.0, 'reference')")
        # policy bfs: no frontier here, and only hybrid passes over queries without frontier candidates
        s = settings.__class__(**{**settings.__dict__, "needy_share": 1.0, "policy": "bfs"})
        assert select_needy(con, s, 3, day)["query"].to_list() == ["head query", "tail query"]  # by frequency
        _history(con, [(2, f"q{x}", float(x), 8 // 2 ** x) for x in range(4)])
        improvability.fit(con, 2)
        needy = select_needy(con, s, 3, day)
    # The head query's results score 9 (entrenched), the tail query has none: it is needier.
    assert needy["query"].to_list() == ["tail query", "head query"]
    assert needy["improvability"][0] > 7 and needy["improvability"][1] < 0.02


def test_improvability_never_exceeds_k_new_results(settings: Settings) -> None:
    day = date(2026, 11, 5)
    with connect(settings) as con:
        migrate(con)
        con.execute("INSERT INTO query_log (partition, query, frequency) VALUES (?, 'well served', 5)", [day])
        con.execute("INSERT INTO query_results VALUES (3, 'well served', 1, 'http://a.test/x', 9.0, 'reference')")
        # a curve rising with the score: 2^9 = 512 new results predicted at score 9, more than K can hold
        _history(con, [(2, f"q{x}", float(x), 2 ** x) for x in range(4)])
        improvability.fit(con, 2)
        needy = select_needy(con, settings.__class__(**{**settings.__dict__, "needy_share": 1.0, "policy": "bfs"}),
                             3, day)
    assert needy["improvability"].to_list() == [settings.top_k]


def test_queries_that_tie_with_the_last_needy_one_are_all_needy_whatever_the_noise(settings: Settings) -> None:
    day = date(2026, 11, 5)
    with connect(settings) as con:
        migrate(con)
        # two needy queries wanted (needy_min); 'c ...', 'b ...' and 'd ...' tie at the second place
        con.execute("INSERT INTO query_log (partition, query, frequency) SELECT ?, q, f FROM (VALUES ('a head', 9), "
                    "('c tied', 4), ('b tied', 4), ('d tied', 4), ('e tail', 3)) t(q, f)", [day])
    picked = []
    for seed in (0, 1, 2, 3):
        s = settings.__class__(**{**settings.__dict__, "needy_min": 2, "needy_share": 0.0, "policy": "bfs",
                                  "perturb_seed": seed})
        with connect(s) as con:  # a connection of the seed's settings carries its noise
            picked.append(select_needy(con, s, 3, day)["query"].to_list())
    assert picked[0] == ["a head", "b tied", "c tied", "d tied"]  # ties by text, all in
    assert all(sorted(p) == picked[0] for p in picked)  # other seeds order the ties otherwise, and keep them all
    assert len({tuple(p) for p in picked}) > 1
