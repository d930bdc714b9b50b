"""The Crawl page's data and HTML, without Airflow: two real cycles against the demo web on loopback (with a
missing page and an unreachable host among the seeds, so that fetch errors show), then the snapshot that
``stages.close`` exported and the page rendered from it, checked against the crawl database."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import lxml.html
import pytest

from crawlcycle.db import connect
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import crawl_snapshot
from crawlcycle.settings import Settings
from crawlcycle.ui import crawl_views
from tests.support.demo import crawled_settings
from tests.support.simulation import write_simulation


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Settings:
    return crawled_settings(tmp_path_factory.mktemp("crawled"), demo_web, demo_server)


def _q(settings: Settings, sql: str) -> list[tuple]:
    with connect(settings, read_only=True) as con:
        return con.execute(sql).fetchall()


def _cells(doc: lxml.html.HtmlElement, table: str, col: str) -> list[str]:
    return [td.text_content() for td in doc.xpath(f'//table[@id="{table}"]//td[@data-col="{col}"]')]


def _has(doc: lxml.html.HtmlElement, element_id: str, child: str = "") -> bool:
    return bool(doc.xpath(f'//*[@id="{element_id}"]' + (f'//*[local-name()="{child}"]' if child else "")))


def test_close_exports_the_tables_the_page_shows(crawled: Settings) -> None:
    snap = crawl_snapshot.load_snapshot(crawled)
    assert snap["cycle"] == 2 and list(snap["tables"]) == list(crawl_snapshot.TABLES)
    t = snap["tables"]
    assert [(c["cycle"], c["fetched"], c["errors"], c["new_urls"], c["next_batch"]) for c in t["cycles"]] == _q(
        crawled, "SELECT cycle, fetched, errors, new_urls, next_batch FROM cycles ORDER BY cycle")
    errors = _q(crawled, "SELECT cycle, error_class, count(*) FROM fetch_log WHERE error_class IS NOT NULL "
                         "GROUP BY ALL ORDER BY 1, 3 DESC, 2")
    assert {e[1] for e in errors} >= {"http_error"} and len({e[1] for e in errors}) >= 2
    assert [(e["cycle"], e["error_class"], e["urls"]) for e in t["fetch_errors"]] == errors
    assert [(g["cycle"], g["gate"], g["checks"], g["passed"]) for g in t["gates"]] == _q(
        crawled, "SELECT cycle, gate, count(*), count(*) FILTER (WHERE success) FROM dq_results GROUP BY ALL "
                 "ORDER BY 1, 2")
    assert [(b["cycle"], b["rank"], b["url"], b["priority"]) for b in t["batch"]] == _q(
        crawled, "SELECT cycle, rank, url, priority FROM batches WHERE cycle = 3 ORDER BY rank")
    assert [(h["host"], h["fetches"], h["errors"]) for h in sorted(t["hosts"], key=lambda h: h["host"])] == _q(
        crawled, "SELECT h.host, count(l.url), count(l.error_class) FROM hosts h LEFT JOIN fetch_log l USING (host) "
                 "GROUP BY 1 ORDER BY 1")
    assert len(t["model_runs"]) == _q(crawled, "SELECT count(*) FROM model_runs")[0][0]
    assert all(isinstance(r["metrics"], dict) for r in t["model_runs"])
    assert [q["query"] for q in t["needy_queries"]] == [r[0] for r in _q(
        crawled, "SELECT query FROM needy_queries WHERE cycle = 2 ORDER BY rank")]


def test_page_numbers_match_the_tables_while_a_writer_holds_the_database(crawled: Settings) -> None:
    with connect(crawled):  # the page reads the snapshot only: an open writer does not stop it
        doc = lxml.html.fromstring(crawl_views.page(crawled))
    cycles = _q(crawled, "SELECT cycle, fetched, errors, new_urls, pages_total FROM cycles ORDER BY cycle")
    for col, i in (("cycle", 0), ("fetched", 1), ("errors", 2), ("new_urls", 3), ("pages_total", 4)):
        assert _cells(doc, "cycles", col) == [str(c[i]) for c in cycles]
    cards = {d.get("data-card"): d.find("b").text for d in doc.xpath('//*[@id="latest"]/div[@data-card]')}
    assert (cards["fetched"], cards["errors"], cards["new_urls"]) == tuple(str(v) for v in cycles[-1][1:4])
    checks = _q(crawled, "SELECT count(*) FILTER (WHERE success), count(*) FROM dq_results WHERE cycle = 2")[0]
    assert cards["gates"] == f"{checks[0]}/{checks[1]}"
    errors = _q(crawled, "SELECT error_class, count(*) FROM fetch_log WHERE error_class IS NOT NULL AND cycle = 2 "
                         "GROUP BY 1")
    shown = dict(zip(_cells(doc, "fetch-errors", "error_class"), _cells(doc, "fetch-errors", "urls"), strict=True))
    assert {k: int(v) for k, v in shown.items() if k in dict(errors)} == dict(errors)
    batch = _q(crawled, "SELECT rank, url, priority, parts->'needy_queries', parts->'needy_odds' FROM batches "
                        "WHERE cycle = 3 ORDER BY rank")
    assert _cells(doc, "batch", "url") == [b[1] for b in batch]
    assert [float(p) for p in _cells(doc, "batch", "priority")] == pytest.approx([b[2] for b in batch], rel=1e-3)
    # each needy query with the odds the URL enters its top K
    needy = [", ".join(f"{q} ({p:.2f})" for q, p in zip(json.loads(b[3] or "[]"), json.loads(b[4] or "[]"),
                                                          strict=True)) for b in batch]
    assert _cells(doc, "batch", "needy_queries") == needy and any(needy)
    hosts = dict(_q(crawled, "SELECT host, count(*) FROM fetch_log GROUP BY 1"))
    shown = dict(zip(_cells(doc, "hosts", "host"), _cells(doc, "hosts", "fetches"), strict=True))
    assert {h: int(n) for h, n in shown.items() if h in hosts} == hosts
    models = dict(_q(crawled, "SELECT model, max(cycle) FROM model_runs GROUP BY 1"))
    assert dict(zip(_cells(doc, "fits", "model"), map(int, _cells(doc, "fits", "cycle")), strict=True)) == models
    for plot in ("plot-cycles", "plot-fits"):
        assert _has(doc, plot, "svg"), plot
    assert _has(doc, "no-simulation")


def test_the_page_shows_each_cycle_s_query_engagement(crawled: Settings) -> None:
    figures = ("needy_queries", "needy_with_candidates", "sketch_frontier_pages", "batch_query_share",
               "batch_query_mass")
    rows = _q(crawled, f"SELECT cycle, {', '.join(figures)} FROM v_cycle_summary ORDER BY cycle")
    assert rows and all(v is not None for r in rows for v in r)  # two hybrid cycles: every figure is there
    exported = crawl_snapshot.load_snapshot(crawled)["tables"]["cycles"]
    assert [tuple(c[k] for k in ("cycle", *figures)) for c in exported] == rows
    doc = lxml.html.fromstring(crawl_views.page(crawled))
    assert _cells(doc, "engagement", "cycle") == [str(r[0]) for r in rows]
    for i, col in enumerate(figures[:3], 1):
        assert _cells(doc, "engagement", col) == [str(r[i]) for r in rows], col
    for i, col in enumerate(figures[3:], 4):  # shares in per cent
        assert [float(v) for v in _cells(doc, "engagement", col)] == pytest.approx([100 * r[i] for r in rows],
                                                                                   abs=0.051), col
    # a snapshot written before the figures existed shows dashes
    assert set(crawl_views.engagement_row({"cycle": 1, "policy": "bfs"}).values()) == {1, "bfs", None}


def test_the_page_shows_each_cycle_s_batch_slots_and_the_origins_held(crawled: Settings) -> None:
    rows = _q(crawled, "SELECT cycle, batch_size, slots_fetched, slots_failed, slots_unanswered, waste_share, probes "
                       "FROM v_cycle_summary ORDER BY cycle")
    # cycle 1: the seed nothing listens on took its slot for nothing, and the missing page gave a 404; cycle 2:
    # that origin was only probed, outside the batch
    assert [(r[0], json.loads(r[3]).get("http_4xx"), r[4], r[6]) for r in rows] == [(1, 1, 1, 0), (2, None, 0, 1)]
    doc = lxml.html.fromstring(crawl_views.page(crawled))
    assert _cells(doc, "slots", "slots_fetched") == [str(r[2]) for r in rows]
    assert [float(v) for v in _cells(doc, "slots", "waste_share")] == pytest.approx([100 * r[5] for r in rows],
                                                                                    abs=0.051)
    assert _cells(doc, "slots", "slots_failed")[0] == "http_4xx 1, robots_unavailable 1"
    assert _has(doc, "plot-slots", "svg")
    held = [(o, _cells(doc, "origins-held", c)[0]) for o, c in (("origin", "origin"), ("state", "state"),
                                                                  ("error", "last_error"), ("next", "next_try_cycle"),
                                                                  ("waiting", "waiting_urls"))]
    assert held == [("origin", "http://down.test"), ("state", "backoff"), ("error", "connection"), ("next", "4"),
                    ("waiting", "1")]


def test_the_newest_simulation_is_drawn(crawled: Settings, tmp_path: Path) -> None:
    sims = tmp_path / "data" / "simulations"
    settings = replace(crawled, data_dir=str(tmp_path / "data"))
    assert crawl_views.newest_simulation(settings) is None
    write_simulation(sims / "older", ["bfs"], seed=1)
    os.utime(sims / "older" / "curve.csv", (1, 1))
    newer = write_simulation(sims / "newer", ["bfs", "hybrid"], seed=2)
    sim = crawl_views.newest_simulation(settings)
    assert sim.folder == sims / "newer" and list(sim.curves) == ["bfs", "hybrid"]
    assert all(sim.curves[p].equals(newer[p]) for p in newer)
    doc = lxml.html.fromstring(crawl_views.page(settings))
    assert _has(doc, "no-snapshot") and _has(doc, "plot-curves", "svg")
    budgets = sim.summaries["hybrid"]["budgets"]
    shown = [float(v) for p, v in zip(_cells(doc, "budgets", "policy"), _cells(doc, "budgets", "pct_of_ideal"),
                                      strict=True) if p == "hybrid"]
    assert shown == pytest.approx([b["pct_of_ideal"] for b in budgets.values()], rel=1e-3)


def test_a_new_snapshot_replaces_the_old_one_whole(crawled: Settings) -> None:
    path = crawl_snapshot.snapshot_path(crawled)
    before = path.stat().st_ino
    with open(path) as reader, connect(crawled) as con:
        crawl_snapshot.export_snapshot(con, crawled, 2)
        # A reader of the old file keeps reading it whole; the name now points at a new file.
        assert json.loads(reader.read())["cycle"] == 2
    assert path.stat().st_ino != before
    assert [p.name for p in path.parent.iterdir()] == [path.name]
