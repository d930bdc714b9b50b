"""The Crawl page's data and HTML, without Airflow: two real cycles against the demo web on loopback (with a
missing page and an unreachable host among the seeds, so that fetch errors show), then the snapshot that
``stages.close`` exported and the page rendered from it, checked against the crawl database."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import lxml.html
import pytest

from crawlcycle.db import connect
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import crawl_snapshot
from crawlcycle.settings import Settings
from crawlcycle.ui import crawl_views, svg_charts
from crawlcycle.ui.svg_charts import Bars, Line, Panel
from tests.support.demo import crawled_settings
from tests.support.simulation import write_simulation


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Settings:
    return crawled_settings(tmp_path_factory.mktemp("crawled"), demo_web, demo_server)


SVG = "{http://www.w3.org/2000/svg}"


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
    assert [(b["fetch_cycle"], b["score_cycle"], b["rank"], b["url"], b["priority"]) for b in t["batch"]] == _q(
        crawled, "SELECT fetch_cycle, score_cycle, rank, url, priority FROM batches WHERE fetch_cycle = 3 "
                 "ORDER BY rank")
    assert [(h["host"], h["fetches"], h["errors"]) for h in sorted(t["hosts"], key=lambda h: h["host"])] == _q(
        crawled, "SELECT h.host, count(l.url), count(l.error_class) FROM hosts h LEFT JOIN fetch_log l USING (host) "
                 "GROUP BY 1 ORDER BY 1")
    assert len(t["model_runs"]) == _q(crawled, "SELECT count(*) FROM model_runs")[0][0]
    assert all(isinstance(r["metrics"], dict) for r in t["model_runs"])
    assert [q["query"] for q in t["needy_queries"]] == [r[0] for r in _q(
        crawled, "SELECT query FROM needy_queries WHERE cycle = 2 ORDER BY rank")]


def test_the_page_links_each_gate_s_report(crawled: Settings) -> None:
    doc = lxml.html.fromstring(crawl_views.page(crawled))
    links = doc.xpath('//table[@id="gates"]//td[@data-col="report"]/a/@href')
    rows = _q(crawled, "SELECT DISTINCT cycle, gate, report FROM dq_results ORDER BY 1, 2")
    assert len(rows) == 8 and links == [f"gates/{c}/{g}/index.html" for c, g, _ in rows]
    for (*_, report), href in zip(rows, links, strict=True):
        _, cycle, gate, path = href.split("/", 3)
        assert crawl_views.gate_report_file(crawled, int(cycle), gate, path) == Path(report).resolve()
    # what the plugin serves stays inside a report's folder
    assert crawl_views.gate_report_file(crawled, 2, "update", "../../../../crawl.duckdb") is None
    assert crawl_views.gate_report_file(crawled, 2, "no_gate", "index.html") is None
    assert crawl_views.gate_report_file(crawled, 2, "update", "no-such-file.html") is None


def test_page_numbers_match_the_tables_while_a_writer_holds_the_database(crawled: Settings) -> None:
    with connect(crawled):  # the page reads the snapshot only: an open writer does not stop it
        text = crawl_views.page(crawled)
    doc = lxml.html.fromstring(text)
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
                        "WHERE fetch_cycle = 3 ORDER BY rank")
    assert _cells(doc, "batch", "url") == [b[1] for b in batch]
    # the cards' cycle chose the batch, which the next cycle fetches: the heading names both
    as_of = doc.xpath('//*[@id="as-of"]/b')[0].text
    heading = doc.xpath('//*[@id="batch-title"]')[0].text_content()
    assert as_of == "2" and heading == "Next batch: chosen by cycle 2, fetched by cycle 3", heading
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
    for plot in ("plot-cycles", "plot-fits", "plot-freshness"):
        assert _has(doc, plot, "svg"), plot
    assert _has(doc, "no-simulation")
    figures = re.findall(r"<svg.*?</svg>", text, re.S)
    assert len(figures) == 4 and all(ET.fromstring(f).tag == f"{SVG}svg" for f in figures)  # well-formed XML


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


def test_the_page_shows_each_cycle_s_freshness(crawled: Settings) -> None:
    figures = ("refreshes", "checks_not_modified", "checks_changed", "checks_gone", "est_freshness",
               "next_refresh_share")
    rows = _q(crawled, f"SELECT cycle, {', '.join(figures)} FROM v_cycle_summary ORDER BY cycle")
    assert rows[0][1] == 0 and rows[1][1] > 0  # the second batch fetched stored pages again
    assert all(0 < r[5] <= 1 and 0 < r[6] < 1 for r in rows)
    doc = lxml.html.fromstring(crawl_views.page(crawled))
    for i, col in enumerate(figures[:4], 1):
        assert _cells(doc, "freshness", col) == [str(r[i]) for r in rows], col
    for i, col in enumerate(figures[4:], 5):  # shares in per cent
        assert [float(v) for v in _cells(doc, "freshness", col)] == pytest.approx([100 * r[i] for r in rows],
                                                                                  abs=0.051), col
    cards = {d.get("data-card"): d.find("b").text for d in doc.xpath('//*[@id="latest"]/div[@data-card]')}
    assert cards["freshness"] == f"{100 * rows[-1][5]:.1f} %"
    assert _has(doc, "plot-freshness", "svg")
    # the bars of what the refreshes found add up to the refreshes of each cycle
    found = crawl_views.refresh_counts([dict(zip(("cycle", *figures), r, strict=True)) for r in rows])
    assert [sum(by_cycle[r[0]] for by_cycle in found.values()) for r in rows] == [r[1] for r in rows]
    # a snapshot written before the figures existed shows dashes
    assert set(crawl_views.freshness_row({"cycle": 1}).values()) == {1, None}


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
    # one green bar per cycle for the slots that gave a page, its tooltip the count
    page_bars = doc.xpath(f'//*[@id="plot-slots"]//rect[@fill="{crawl_views.PAGE_COLOR}"]/title/text()')
    assert page_bars == [f"page ({r[0]}): {r[2]}" for r in rows]
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


# -- the SVG charts ----------------------------------------------------------------------------------------


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # fails unless the SVG is well-formed XML


def _frame(root: ET.Element) -> tuple[float, float]:
    """The plot area's top and bottom in pixels (the one rectangle drawn without a fill)."""
    rect = next(r for r in root.iter(f"{SVG}rect") if r.get("fill") == "none")
    return float(rect.get("y")), float(rect.get("y")) + float(rect.get("height"))


def _bars(root: ET.Element) -> dict[str, tuple[float, ...]]:
    """Each bar's tooltip -> (left, top, width, height) in pixels."""
    return {r.find(f"{SVG}title").text: tuple(float(r.get(a)) for a in ("x", "y", "width", "height"))
            for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None}


def _points(polyline: ET.Element) -> list[tuple[float, ...]]:
    return [tuple(map(float, xy.split(","))) for xy in polyline.get("points").split()]


def _tick_labels(root: ET.Element, anchor: str) -> list[str]:
    """The tick labels of the y axis (``anchor="end"``) or of the x axis (``"middle"``, with axis labels)."""
    return [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == anchor]


def test_stacked_bars_are_as_tall_as_their_values_and_stand_on_each_other() -> None:
    root = _parse(svg_charts.render([Panel(bars=[Bars("a", {2: 2, 4: 4}), Bars("b", {2: 3, 4: 0})],
                                           integer_y=True)]))
    bars = _bars(root)
    assert set(bars) == {"a (2): 2", "a (4): 4", "b (2): 3"}  # no bar for a zero
    (a1_x, a1_top, width, a1), (a2_x, _, _, a2), (b1_x, b1_top, _, b1) = (bars["a (2): 2"], bars["a (4): 4"],
                                                                         bars["b (2): 3"])
    assert a2 == pytest.approx(2 * a1, abs=0.2) and b1 == pytest.approx(1.5 * a1, abs=0.2)
    top, bottom = _frame(root)
    assert a1_top + a1 == pytest.approx(bottom, abs=0.2)  # a stands on 0 ...
    assert b1_top + b1 == pytest.approx(a1_top, abs=0.2)  # ... and b on a, in a's column
    assert b1_x == a1_x < a2_x and width == pytest.approx(0.8 * (a2_x - a1_x), abs=0.2)  # 80 % of a column
    assert b1_top == pytest.approx(top, abs=0.2)  # the y axis ends at the round tick 5, the stack's top
    assert _tick_labels(root, "end") == ["0", "1", "2", "3", "4", "5"]
    assert _tick_labels(root, "middle") == ["2", "4"]  # the bars' positions


def test_a_line_s_points_keep_their_order_and_scale_linearly() -> None:
    line = Line("s", [3, 1, 2, 4, 5], [5, 0, 10, None, math.nan], markers=True)  # missing values are left out
    root = _parse(svg_charts.render([Panel(lines=[line])]))
    lines = list(root.iter(f"{SVG}polyline"))
    assert len(lines) == 2  # the legend's sample, then the series
    points = _points(lines[1])
    assert len(points) == 3
    (x3, y5), (x1, y0), (x2, y10) = points
    assert x1 < x2 < x3 and x3 - x2 == pytest.approx(x2 - x1, abs=0.2)  # x grows to the right
    assert y10 < y5 < y0 and y0 - y5 == pytest.approx(y5 - y10, abs=0.2)  # y grows upwards
    markers = [(float(c.get("cx")), float(c.get("cy"))) for c in root.iter(f"{SVG}circle") if c.get("r") == "3"]
    assert markers == points


@pytest.mark.parametrize(("lo", "hi", "integer"), [(0, 37, False), (0, 1.02, False), (0.3, 0.7, False),
                                                   (-3, 1234, False), (1e-5, 3.3e-5, False), (5, 5, False),
                                                   (0, 0, True), (0, 3, True), (2, 987654, True)])
def test_ticks_are_round_numbers_covering_the_range(lo: float, hi: float, integer: bool) -> None:
    ticks = svg_charts.nice_ticks(lo, hi, integer=integer)
    assert ticks[0] <= lo and ticks[-1] >= hi and 2 <= len(ticks) <= 13
    steps = {round(b - a, 12) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1
    step = steps.pop()
    assert round(step / 10 ** math.floor(math.log10(step)), 9) in (1, 2, 5)
    assert all(round(t / step, 9).is_integer() for t in ticks)
    assert all(len(repr(t)) <= 10 for t in ticks)  # no float noise such as 0.30000000000000004
    if integer:
        assert all(t.is_integer() for t in ticks)
    if lo == hi:
        assert ticks[0] < lo < ticks[-1] or lo == ticks[0] == 0


def test_a_y_range_keeps_its_limits_and_a_log_axis_has_decades() -> None:
    curve = Line("c", [0, 0.5, 1], [0, 0.7, 1])
    root = _parse(svg_charts.render([Panel(lines=[curve], ylim=(0, 1.02)),
                                     Panel(lines=[Line("e", [1, 2, 3], [0.01, 1, 100])], log_y=True)]))
    assert _tick_labels(root, "end") == ["0", "0.2", "0.4", "0.6", "0.8", "1", "0.01", "0.1", "1", "10", "100"]
    top, bottom = _frame(root)
    points = _points(list(root.iter(f"{SVG}polyline"))[1])
    assert points[2][1] == pytest.approx(bottom - (bottom - top) / 1.02, abs=0.2)  # 1 just under the top, 1.02


def test_text_is_escaped() -> None:
    label = 'a <b> & "c"'
    root = _parse(svg_charts.render([Panel(lines=[Line(label, [1, 2], [1, 2])], title=label, xlabel=label,
                                           ylabel=label, note=label),
                                     Panel(bars=[Bars(label, {1: 1})])]))
    assert [t.text for t in root.iter(f"{SVG}text")].count(label) == 6  # legends, title, axis labels, note
    assert list(_bars(root)) == [f"{label} (1): 1"]  # the bar's tooltip


def test_colours_come_from_one_cycle_that_a_given_colour_does_not_use_up() -> None:
    root = _parse(svg_charts.render([Panel(bars=[Bars("page", {1: 1}, color="#2f855a"), Bars("x", {1: 1}),
                                                 Bars("y", {1: 1})])]))
    assert [r.get("fill") for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None] == [
        "#2f855a", *svg_charts.COLORS[:2]]


def test_panels_side_by_side_share_the_plot_area_s_top_and_bottom() -> None:
    root = _parse(svg_charts.render([Panel(lines=[Line("a", [1], [1])]), Panel(title="titled", note="empty")]))
    frames = [(float(r.get("x")), float(r.get("y")), float(r.get("height")))
              for r in root.iter(f"{SVG}rect") if r.get("fill") == "none"]
    assert len(frames) == 2 and frames[0][1:] == frames[1][1:] and frames[0][0] < 450 < frames[1][0]
    assert root.get("viewBox") == "0 0 900 320"
