"""Whether the query-driven part of a policy engages: the figures a closing cycle writes to ``cycles``
(``v_cycle_summary``), checked against the tables they count, in real cycles against the demo web on loopback;
and an older database upgraded by the migration."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from crawlcycle.db import SQL_DIR, connect, migrate, run_sql
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings
from crawlcycle.ui.report import print_report
from tests.support.demo import demo_settings

DAYS = [date(2026, 11, 1), date(2026, 11, 2)]
FIGURES = ["needy_queries", "needy_with_candidates", "sketch_frontier_pages", "batch_query_share",
           "batch_query_mass"]


def figures(settings: Settings) -> dict[int, dict]:
    """cycle -> the engagement figures v_cycle_summary shows."""
    with connect(settings, read_only=True) as con:
        rows = con.execute(f"SELECT cycle, {', '.join(FIGURES)} FROM v_cycle_summary ORDER BY cycle").fetchall()
    return {r[0]: dict(zip(FIGURES, r[1:], strict=True)) for r in rows}


def recomputed(settings: Settings, c: int) -> dict:
    """The figures of cycle ``c`` counted here, in Python, from the rows of needy_queries, sketches and batches (its
    new URLs: refreshes are the refresh policy's)."""
    with connect(settings, read_only=True) as con:
        candidates = [n for (n,) in con.execute("SELECT candidates FROM needy_queries WHERE cycle = ?", [c]).fetchall()]
        sketches = con.execute("SELECT url, crawled FROM sketches WHERE cycle = ?", [c]).fetchall()
        batch = [(p, json.loads(parts)) for p, parts in
                 con.execute("SELECT priority, parts FROM batches WHERE score_cycle = ? AND kind = 'new'",
                             [c]).fetchall()]
    known = [n for n in candidates if n is not None]
    impact = [parts["query_impact"] for _, parts in batch if parts.get("query_impact") is not None]
    query_priority = [parts["query_priority"] for _, parts in batch if parts.get("query_priority") is not None]
    return {"needy_queries": len(candidates),
            "needy_with_candidates": sum(n > 0 for n in known) if known else None,
            "sketch_frontier_pages": len({u for u, crawled in sketches if not crawled}) if sketches else None,
            "batch_query_share": sum(i > 0 for i in impact) / len(batch) if impact else None,
            "batch_query_mass": sum(query_priority) / sum(p for p, _ in batch) if query_priority else None}


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Settings:
    """Two hybrid cycles (the default policy)."""
    settings = demo_settings(tmp_path_factory.mktemp("hybrid"), demo_web, demo_server)
    stages.init(settings)
    for day in DAYS:
        stages.run_cycle(settings, day, progress=lambda m: None)
    return settings


def test_hybrid_cycles_show_their_engagement_as_the_tables_count_it(hybrid: Settings) -> None:
    shown = figures(hybrid)
    assert list(shown) == [1, 2]
    for c, row in shown.items():
        assert all(row[f] is not None for f in FIGURES), (c, row)
        again = recomputed(hybrid, c)
        for f in FIGURES[:3]:
            assert row[f] == again[f], (c, f)
        for f in FIGURES[3:]:
            assert row[f] == pytest.approx(again[f], abs=1e-9), (c, f)
        assert 0 < row["needy_with_candidates"] <= row["needy_queries"]
        assert row["sketch_frontier_pages"] > 0
        assert 0 < row["batch_query_mass"] <= 1 and 0 < row["batch_query_share"] <= 1
    with connect(hybrid, read_only=True) as con:
        # the query part never exceeds the priority it is part of
        assert con.execute("SELECT count(*) FROM batches WHERE (parts->>'query_priority')::DOUBLE > priority + 1e-12"
                           ).fetchall() == [(0,)]
        # the cycle's own table holds what the view shows
        assert con.execute(f"SELECT cycle, {', '.join(FIGURES)} FROM cycles ORDER BY cycle").fetchall() == [
            (c, *row.values()) for c, row in shown.items()]


def test_the_report_prints_each_cycle_s_engagement(hybrid: Settings, capsys: pytest.CaptureFixture) -> None:
    print_report(hybrid)
    out = capsys.readouterr().out
    for c, row in figures(hybrid).items():
        line = next(x for x in out.splitlines() if x.startswith(f"cycle {c} query engagement (hybrid): "))
        assert (f"needy queries {row['needy_queries']}, with frontier candidates {row['needy_with_candidates']}, "
                f"frontier pages in sketches {row['sketch_frontier_pages']}") in line
        assert f"URLs with query impact {100 * row['batch_query_share']:.1f} %" in line
        assert f"priority mass from queries {100 * row['batch_query_mass']:.1f} %" in line


def test_a_replay_writes_the_same_figures(hybrid: Settings, tmp_path: Path) -> None:
    before = figures(hybrid)
    again = stages.run_cycle(hybrid, DAYS[1], progress=lambda m: None)
    assert again["cycle"] == 2 and {f: again[f] for f in FIGURES} == before[2]
    assert figures(hybrid) == before


def test_a_policy_without_a_query_part_has_null_figures(tmp_path: Path, demo_web: DemoWeb,
                                                        demo_server: int) -> None:
    settings = demo_settings(tmp_path, demo_web, demo_server, policy="bfs")
    stages.init(settings)
    stages.run_cycle(settings, DAYS[0], progress=lambda m: None)
    (row,) = figures(settings).values()
    # needy queries are selected whatever the policy; bfs looks for no candidates, sketches nothing, and its
    # priorities have no query part
    assert row == {**recomputed(settings, 1), "needy_with_candidates": None, "sketch_frontier_pages": None,
                   "batch_query_share": None, "batch_query_mass": None}
    assert row["needy_queries"] >= 1


@pytest.mark.parametrize("policy", ["q_overlap", "q_hybrid", "ml"])
def test_the_other_query_policies_show_their_query_part(tmp_path: Path, demo_web: DemoWeb, demo_server: int,
                                                        policy: str) -> None:
    settings = demo_settings(tmp_path, demo_web, demo_server, policy=policy)
    stages.init(settings)
    stages.run_cycle(settings, DAYS[0], progress=lambda m: None)
    (row,) = figures(settings).values()
    again = recomputed(settings, 1)
    assert row == {**again, "batch_query_share": pytest.approx(again["batch_query_share"], abs=1e-9),
                   "batch_query_mass": pytest.approx(again["batch_query_mass"], abs=1e-9)}
    assert 0 <= row["batch_query_share"] <= 1 and row["sketch_frontier_pages"] is None
    with connect(settings, read_only=True) as con:
        fits = [json.loads(m) for (m,) in con.execute("SELECT metrics FROM model_runs WHERE cycle = 1 AND "
                                                      "model = 'ml'").fetchall()]
    # ml has a query part of its priority only while q_hybrid orders the frontier (no tree fitted)
    if policy == "ml" and "reason" not in fits[0]:
        assert row["batch_query_mass"] is None
    else:
        assert 0 <= row["batch_query_mass"] <= 1


def test_an_older_database_upgrades_with_null_figures(settings: Settings, capsys: pytest.CaptureFixture) -> None:
    """A database of migrations 001-008 with a closed cycle: the migration adds the columns, the old cycle shows
    NULL figures, and the cycle summary and the report read it."""
    with connect(settings) as con:
        con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                    "applied_at TIMESTAMP DEFAULT current_timestamp)")
        for path in sorted((SQL_DIR / "migrations").glob("00[1-8]_*.sql")):
            run_sql(con, f"migrations/{path.stem}")
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [int(path.name[:3]), path.stem])
        con.execute("INSERT INTO cycles (cycle, interval_start, policy, status, fetched) "
                    "VALUES (1, DATE '2026-11-01', 'hybrid', 'done', 5)")
        con.execute("INSERT INTO needy_queries VALUES (1, 'old query', 3, 1, 3, 1)")
        assert "009_engagement" in migrate(con)
        assert con.execute("SELECT candidates FROM needy_queries").fetchall() == [(None,)]
    assert figures(settings) == {1: dict.fromkeys(FIGURES)}
    print_report(settings)
    assert ("cycle 1 query engagement (hybrid): needy queries –, with frontier candidates –, frontier pages in "
            "sketches –, next batch: URLs with query impact –, priority mass from queries –") in capsys.readouterr().out
