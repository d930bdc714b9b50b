"""The "Crawl" page of the Airflow UI, made from the snapshot of the crawl state each cycle's close writes.

The page never opens the DuckDB file (any other open fails while a task has it open read-write): it reads the
snapshot the close stage writes (:mod:`crawlcycle.pipeline.crawl_snapshot`). :func:`page` renders that snapshot
and the newest simulation found under ``<data_dir>/simulations/`` as one HTML page with inline SVG plots (no
JavaScript).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from crawlcycle.pipeline.crawl_snapshot import load_snapshot
from crawlcycle.quality.gate_suites import STAGES
from crawlcycle.settings import Settings
from crawlcycle.ui import svg_charts
from crawlcycle.ui.svg_charts import Bars, Line, Panel

# Metric names (or parts of them) that say how good a fit is: plotted over cycles; counts stay in the table.
FIT_METRICS = ("r2", "mae", "rmse", "slope", "residual", "score")
# Slots that gave a page: green, apart from the colour cycle the failures and skips take.
PAGE_COLOR = "#2f855a"


@dataclass(frozen=True)
class Simulation:
    """One run of the simulator: each policy's ``curve.csv`` and ``summary.json``."""

    folder: Path
    curves: dict[str, pl.DataFrame]
    summaries: dict[str, dict]


def newest_simulation(settings: Settings) -> Simulation | None:
    """The simulator run under ``<data_dir>/simulations/`` with the newest curve. A run of one policy keeps
    ``curve.csv`` in its output folder; a run of several keeps ``<policy>/curve.csv`` and ``curves.png``."""
    root = Path(settings.data_dir) / "simulations"
    runs: dict[Path, float] = {}
    for curve in root.rglob("curve.csv") if root.is_dir() else []:
        run = curve.parent.parent if (curve.parent.parent / "curves.png").is_file() else curve.parent
        runs[run] = max(runs.get(run, 0.0), curve.stat().st_mtime)
    if not runs:
        return None
    folder = max(runs, key=lambda r: runs[r])
    files = sorted(folder.glob("*/curve.csv")) if (folder / "curves.png").is_file() else [folder / "curve.csv"]
    curves, summaries = {}, {}
    for f in files:
        summary = json.loads((f.parent / "summary.json").read_text()) if (f.parent / "summary.json").is_file() else {}
        policy = summary.get("policy", f.parent.name)
        curves[policy] = pl.read_csv(f)
        summaries[policy] = summary
    return Simulation(folder, curves, summaries)


def page(settings: Settings) -> str:
    """The whole Crawl page from the exported snapshot and the newest simulation."""
    return render(load_snapshot(settings), newest_simulation(settings))


# -- rendering ---------------------------------------------------------------------------------------------


def fmt(value: Any) -> str:
    """A cell's text: integers in full, other numbers to 4 significant digits (whole numbers from 1000 on)."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {fmt(v)}" for k, v in value.items())
    return str(value)


_NUMERIC = ' class="n"'


def _table(table_id: str, columns: list[tuple[str, str]], rows: list[dict], key: str | None = None,
           links: dict[str, Callable[[dict], str | None]] | None = None) -> str:
    """An HTML table; each cell carries its column name (``data-col``) and each row its key (``data-key``). A column
    of ``links`` shows its label as a link to the address the function gives the row (nothing for None)."""
    if not rows:
        return f'<p class="empty" id="{table_id}">None.</p>'
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in columns)
    body = []
    for row in rows:
        attr = f' data-key="{html.escape(str(row[key]))}"' if key else ""
        cells = "".join(f'<td data-col="{col}"{_NUMERIC if isinstance(row.get(col), int | float) else ""}>'
                        f"{_cell(row, col, label, (links or {}).get(col))}</td>" for col, label in columns)
        body.append(f"<tr{attr}>{cells}</tr>")
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _cell(row: dict, col: str, label: str, link: Callable[[dict], str | None] | None) -> str:
    if link is None:
        return html.escape(fmt(row.get(col)))
    href = link(row)
    return f'<a href="{html.escape(href)}">{html.escape(label)}</a>' if href else ""


def gate_report_href(row: dict) -> str | None:
    """The Crawl page's link to a gate's HTML report (served by the plugin from the quality folder), if it has one."""
    return f"gates/{row['cycle']}/{row['gate']}/index.html" if row.get("report") else None


def gate_report_file(settings: Settings, cycle: int, gate: str, path: str) -> Path | None:
    """The file ``path`` of gate ``gate``'s report of cycle ``cycle``, or None when there is no such file inside
    that report's folder."""
    if gate not in STAGES:
        return None
    folder = (Path(settings.data_dir) / "quality" / f"{cycle:05d}" / gate).resolve()
    file = (folder / path).resolve()
    return file if file.is_relative_to(folder) and file.is_file() else None


def _figure(plot_id: str, caption: str, svg: str) -> str:
    return f'<figure id="{plot_id}">{svg}<figcaption>{html.escape(caption)}</figcaption></figure>'


def _cycles_plot(cycles: list[dict], errors: list[dict]) -> str:
    xs = [c["cycle"] for c in cycles]
    runs = [Line(label, xs, [c[col] or 0 for c in cycles], markers=True)
            for col, label in (("fetched", "fetched"), ("new_urls", "new URLs"), ("errors", "errors"))]
    classes = sorted({e["error_class"] for e in errors})
    layers = [Bars(cls, {e["cycle"]: e["urls"] for e in errors if e["error_class"] == cls and e["cycle"] in xs})
              for cls in classes]
    panels = [Panel(lines=runs, xlabel="cycle", xticks=xs, integer_y=True),  # counts of URLs
              Panel(bars=layers, title="fetch errors by class", xlabel="cycle", xticks=xs, integer_y=True,
                    note="" if classes else "no fetch errors")]
    return _figure("plot-cycles", "URLs fetched, new and failed per cycle; errors by class",
                   svg_charts.render(panels))


def slot_counts(cycles: list[dict]) -> dict[str, dict[int, int]]:
    """What each cycle's batch slots gave, by kind: ``page``, ``failed: <class>`` and ``not tried: <reason>`` ->
    cycle -> slots (cycles without figures left out)."""
    out: dict[str, dict[int, int]] = {}
    for c in cycles:
        if c.get("slots_fetched") is None:
            continue
        out.setdefault("page", {})[c["cycle"]] = c["slots_fetched"]
        for kind, column in (("failed", "slots_failed"), ("not tried", "slots_skipped")):
            for cls, n in (c[column] or {}).items():
                out.setdefault(f"{kind}: {cls}", {})[c["cycle"]] = n
    return out


def _slots_plot(cycles: list[dict]) -> str:
    layers = [Bars(kind, by_cycle, color=PAGE_COLOR if kind == "page" else None)
              for kind, by_cycle in slot_counts(cycles).items()]
    panel = Panel(bars=layers, xlabel="cycle", ylabel="batch slots", integer_y=True)
    return _figure("plot-slots", "What each cycle's batch slots gave: a page, a try without one (by class), or no "
                                 "try (by reason)", svg_charts.render([panel]))


def refresh_counts(cycles: list[dict]) -> dict[str, dict[int, int]]:
    """What each cycle's refreshes found, by kind: ``not modified``, ``changed``, ``left the index`` and ``unchanged or
    failed`` (the rest) -> cycle -> refreshes (cycles without figures left out)."""
    out: dict[str, dict[int, int]] = {k: {} for k in ("not modified", "changed", "left the index",
                                                      "unchanged or failed")}
    for c in cycles:
        if c.get("refreshes") is None:
            continue
        found = {"not modified": c["checks_not_modified"], "changed": c["checks_changed"],
                 "left the index": c["checks_gone"]}
        for kind, n in {**found, "unchanged or failed": c["refreshes"] - sum(found.values())}.items():
            out[kind][c["cycle"]] = n
    return out


def _freshness_plot(cycles: list[dict]) -> str:
    xs = [c["cycle"] for c in cycles]
    shares = [Line(label, xs, [c.get(col) for c in cycles], markers=True)
              for col, label in (("est_freshness", "estimated freshness"),
                                 ("next_refresh_share", "refresh share of the next batch"))]
    found = refresh_counts(cycles)
    panels = [Panel(lines=shares, title="freshness of the index", xlabel="cycle", xticks=xs, ylim=(0.0, 1.0)),
              Panel(bars=[Bars(kind, by_cycle) for kind, by_cycle in found.items()], title="what the refreshes found",
                    xlabel="cycle", xticks=xs, integer_y=True,
                    note="" if any(v for by_cycle in found.values() for v in by_cycle.values()) else "no refreshes")]
    return _figure("plot-freshness", "Estimated freshness of the index (mean P(unchanged) over indexed pages) and the "
                                     "refresh share of the batch each cycle chose; what each cycle's refreshes found",
                   svg_charts.render(panels))


def _curves_plot(sim: Simulation) -> str:
    longest = max(sim.curves.values(), key=lambda c: c.height)
    lines = [Line("ideal", longest["fraction"].to_list(), longest["ideal"].to_list(), color="black", dashed=True)]
    lines += [Line(policy, points["fraction"].to_list(), points["policy"].to_list())
              for policy, points in sim.curves.items()]
    panel = Panel(lines=lines, xlabel="fraction of the snapshot's pages fetched", ylabel="true impact share",
                  ylim=(0, 1.02))
    return _figure("plot-curves", f"Impact curves of the simulation in {sim.folder}",
                   svg_charts.render([panel], height=360))


def fit_series(model_runs: list[dict]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """model -> metric -> [(cycle, value)] for the numeric metrics named in FIT_METRICS."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for run in model_runs:
        for name, value in (run["metrics"] or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool) and any(m in name for m in FIT_METRICS):
                out.setdefault(run["model"], {}).setdefault(name, []).append((run["cycle"], float(value)))
    return out


def _fits_plot(series: dict[str, dict[str, list[tuple[int, float]]]]) -> str:
    panels = []
    for model, metrics in series.items():
        values = [v for points in metrics.values() for _, v in points]
        panels.append(Panel(lines=[Line(name, [c for c, _ in points], [v for _, v in points], markers=True)
                                   for name, points in metrics.items()],
                            title=model, xlabel="cycle",
                            xticks=sorted({c for points in metrics.values() for c, _ in points}),
                            log_y=min(values) > 0 and max(values) / min(values) > 1000))  # spans decades
    return _figure("plot-fits", "Fit quality of each model over cycles",
                   svg_charts.render(panels, width=max(400, 320 * len(panels))))


_CYCLE_COLUMNS = [("cycle", "cycle"), ("interval_start", "interval"), ("query_log", "query log"),
                  ("policy", "policy"), ("status", "status"), ("batch_size", "batch"), ("fetched", "fetched"),
                  ("errors", "errors"), ("new_urls", "new URLs"),
                  ("pages_total", "pages"), ("frontier_open", "frontier open"), ("next_batch", "next batch"),
                  ("seconds", "seconds"), ("gate_failures", "gate failures")]
# Whether the query-driven part of each cycle's policy engaged; shares shown in per cent.
_ENGAGEMENT_COLUMNS = [("cycle", "cycle"), ("policy", "policy"), ("needy_queries", "needy queries (odds)"),
                       ("needy_with_candidates", "with frontier candidates"),
                       ("sketch_frontier_pages", "frontier pages in sketches"),
                       ("batch_query_share", "next batch: % of URLs with query impact"),
                       ("batch_query_mass", "next batch: % of priority from queries")]
# How fresh each cycle kept the index; shares shown in per cent.
_FRESHNESS_COLUMNS = [("cycle", "cycle"), ("refreshes", "refreshes"), ("checks_not_modified", "not modified (304)"),
                      ("checks_changed", "changed"), ("checks_gone", "left the index"),
                      ("est_freshness", "estimated freshness %"), ("next_refresh_share", "next batch: % refreshes")]
_SLOT_COLUMNS = [("cycle", "cycle"), ("batch_size", "slots"), ("slots_fetched", "pages"),
                 ("slots_failed", "without a page"), ("slots_skipped", "not tried"),
                 ("slots_unanswered", "to origins that did not answer"), ("waste_share", "waste %"),
                 ("probes", "origins probed"), ("untested_slots", "next batch: slots for origins without a page")]
_SETTING_COLUMNS = [("cycle", "cycle"), ("setting", "setting"), ("value", "value"), ("source", "from")]
_CHANGE_COLUMNS = [("cycle", "cycle"), ("setting", "setting"), ("change", "old → new"), ("source", "from")]
_HELD_COLUMNS = [("origin", "origin"), ("state", "state"), ("failures", "failures in a row"),
                 ("last_error", "last error"), ("last_tried_cycle", "last tried (cycle)"),
                 ("last_tried_at", "last tried at"), ("next_try_cycle", "tried again in cycle"),
                 ("waiting_urls", "URLs waiting")]
_HOST_COLUMNS = [("host", "host"), ("robots", "robots.txt per origin"), ("crawl_delay", "crawl-delay"),
                 ("delay", "delay s"), ("last_response_ms", "last ms"), ("consecutive_errors", "errors in a row"),
                 ("backoff_until", "backed off until"), ("fetches", "fetches"), ("errors", "errors"),
                 ("avg_ms", "avg ms"), ("p95_ms", "p95 ms")]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1rem 1.5rem; color: #1a202c; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; border-bottom: 1px solid #cbd5e0; }
table { border-collapse: collapse; margin: .5rem 0; font-size: 13px; }
th, td { border: 1px solid #e2e8f0; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #edf2f7; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.cards { display: flex; gap: .75rem; flex-wrap: wrap; }
.card { border: 1px solid #cbd5e0; border-radius: 6px; padding: .4rem .8rem; min-width: 7rem; }
.card b { display: block; font-size: 1.3rem; } .bad { color: #c53030; }
figure { margin: .5rem 0; } figure svg { max-width: 100%; height: auto; } figcaption { color: #4a5568; }
.scroll { max-height: 28rem; overflow: auto; display: inline-block; }
"""


def render(snapshot: dict | None, simulation: Simulation | None) -> str:
    """The Crawl page as one HTML document."""
    parts = ["<h1>Crawl</h1>"]
    if snapshot is None:
        parts.append('<p id="no-snapshot">No crawl cycle has finished yet: the page shows the crawl once the first '
                     "cycle closes.</p>")
    else:
        parts += _crawl_sections(snapshot)
    parts.append("<h2>Policy curves</h2>")
    if simulation is None:
        parts.append('<p id="no-simulation">No simulation yet (<code>crawlcycle simulate</code> writes them under '
                     "the data folder's <code>simulations/</code>).</p>")
    else:
        parts.append(_curves_plot(simulation))
        budgets = [{"policy": p, "budget": b, **v} for p, s in simulation.summaries.items()
                   for b, v in s.get("budgets", {}).items()]
        parts.append(_table("budgets", [("policy", "policy"), ("budget", "budget"), ("fetches", "fetches"),
                                        ("pct_of_ideal", "share of ideal"), ("p_cs", "P_CS"), ("p_st", "P_ST")],
                            budgets))
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Crawl</title>'
            f"<style>{_STYLE}</style></head><body>{''.join(parts)}</body></html>")


def slots_row(c: dict) -> dict:
    """A cycle's batch-slot figures as the page shows them: the waste share in per cent (one decimal)."""
    return {**{k: c.get(k) for k, _ in _SLOT_COLUMNS},
            "waste_share": None if c.get("waste_share") is None else round(100 * c["waste_share"], 1)}


def freshness_row(c: dict) -> dict:
    """A cycle's freshness figures as the page shows them: shares in per cent (one decimal)."""
    pct = {k: None if c.get(k) is None else round(100 * c[k], 1) for k in ("est_freshness", "next_refresh_share")}
    return {**{k: c.get(k) for k, _ in _FRESHNESS_COLUMNS}, **pct}


def engagement_row(c: dict) -> dict:
    """A cycle's engagement figures as the page shows them: shares in per cent (one decimal)."""
    pct = {k: None if c.get(k) is None else round(100 * c[k], 1) for k in ("batch_query_share", "batch_query_mass")}
    return {**{k: c.get(k) for k, _ in _ENGAGEMENT_COLUMNS}, **pct}


def setting_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each cycle's settings not at their defaults, and the changes between cycles (``old → new``), from the
    snapshot's ``settings`` (v_cycle_settings); a change back to the default comes from "default"."""
    changes = [{**r, "change": f"{r['previous']} → {r['value']}", "source": r["source"] or "default"}
               for r in rows if r["changed"]]
    return [r for r in rows if r["source"] is not None], changes


def _settings_section(rows: list[dict]) -> list[str]:
    non_default, changes = setting_rows(rows)
    return ["<h2>Settings</h2><p>Each cycle runs with the settings its begin recorded; an edit of the settings file "
            "applies from the next cycle. The changes between cycles, and each cycle's settings that are not at their "
            "defaults, with where the value came from: the settings file, an environment variable, a flag of "
            "<code>crawlcycle</code> or a parameter of the Airflow run.</p>",
            _table("setting-changes", _CHANGE_COLUMNS, changes) if changes
            else '<p id="setting-changes">No setting changed between cycles.</p>',
            '<div class="scroll">', _table("settings", _SETTING_COLUMNS, non_default), "</div>"]


def _crawl_sections(snapshot: dict) -> list[str]:
    t = snapshot["tables"]
    cycle = snapshot["cycle"]
    latest = next((c for c in t["cycles"] if c["cycle"] == cycle), {})
    gates = [g for g in t["gates"] if g["cycle"] == cycle]
    passed, checks = sum(g["passed"] for g in gates), sum(g["checks"] for g in gates)
    cards = [("fetched", "fetched", latest.get("fetched")), ("errors", "errors", latest.get("errors")),
             ("new_urls", "new URLs", latest.get("new_urls")), ("pages_total", "pages", latest.get("pages_total")),
             ("frontier_open", "frontier open", latest.get("frontier_open")),
             ("next_batch", "next batch", latest.get("next_batch")),
             ("waste", "slots without a page", None if latest.get("waste_share") is None
              else f"{100 * latest['waste_share']:.1f} %"),
             ("freshness", "estimated freshness", None if latest.get("est_freshness") is None
              else f"{100 * latest['est_freshness']:.1f} %"),
             ("gates", "gate checks passed", f"{passed}/{checks}")]
    card_html = "".join(f'<div class="card{" bad" if key == "gates" and passed < checks else ""}" data-card="{key}">'
                        f"{html.escape(label)}<b>{html.escape(fmt(value))}</b></div>" for key, label, value in cards)
    out = [f'<p id="as-of">Cycle <b>{cycle}</b> ({html.escape(str(latest.get("interval_start", "")))}, policy '
           f'{html.escape(str(latest.get("policy", "")))}), exported {html.escape(snapshot["exported_at"])}</p>',
           f'<div class="cards" id="latest">{card_html}</div>',
           "<h2>Cycles</h2>", _cycles_plot(t["cycles"], t["fetch_errors"]),
           _table("cycles", _CYCLE_COLUMNS, t["cycles"], key="cycle"),
           "<h3>Batch slots</h3><p>What each cycle's batch slots gave: a page, a try without one (by class: the "
           "fetch's error class, http_4xx, http_5xx, redirect to another host), or no try (by reason: politeness or "
           "robots.txt); the slots that went to origins that did not answer, the share without a page (waste), and "
           "the origins whose robots.txt was fetched outside the batch (probes).</p>",
           _slots_plot(t["cycles"]),
           _table("slots", _SLOT_COLUMNS, [slots_row(c) for c in t["cycles"]], key="cycle"),
           "<h3>Query engagement</h3><p>Whether the query-driven part of each cycle's policy engaged: its needy "
           "queries, those with frontier candidates when they were chosen, the frontier pages their sketches hold, "
           "and in the batch the cycle chose the URLs with query-based impact and the priority that came from "
           "queries; – where the policy has no such part.</p>",
           _table("engagement", _ENGAGEMENT_COLUMNS, [engagement_row(c) for c in t["cycles"]], key="cycle"),
           "<h3>Freshness</h3><p>How fresh each cycle kept the index: the stored pages its batch fetched again "
           "(refreshes) and what their checks found (not modified: a 304 to the conditional request; changed: the "
           "main text differs; left the index: gone or now redirecting), the estimated freshness of the index it "
           "left (the mean over indexed pages of the chance that the page has not changed since it was last fetched, "
           "from each page's estimated change rate), and the share of refreshes in the batch it chose.</p>",
           _freshness_plot(t["cycles"]),
           _table("freshness", _FRESHNESS_COLUMNS, [freshness_row(c) for c in t["cycles"]], key="cycle"),
           "<h3>Fetch errors by class</h3>",
           _table("fetch-errors", [("cycle", "cycle"), ("error_class", "class"), ("urls", "URLs")], t["fetch_errors"]),
           "<h3>Quality gates</h3>",
           _table("gates", [("cycle", "cycle"), ("gate", "gate"), ("checks", "checks"), ("passed", "passed"),
                            ("failed", "failed"), ("warned", "warned"), ("report", "report")], t["gates"],
                  links={"report": gate_report_href}),
           _table("gate-problems", [("cycle", "cycle"), ("gate", "gate"), ("expectation", "check"),
                                    ("severity", "severity"), ("failed_rows", "failed rows"),
                                    ("observed", "observed")], t["gate_problems"]) if t["gate_problems"]
           else '<p id="gate-problems">Every check passed in the latest cycle with gate results.</p>']
    batch = t["batch"]
    # named by the cycle above, which chose it, and by the one that fetches it (contracts.cycles.batch_cycles)
    batch_title = (f"Next batch: chosen by cycle {batch[0]['score_cycle']}, fetched by cycle {batch[0]['fetch_cycle']}"
                   if batch else "Next batch")
    rows = [{**b, "parts": {k: v for k, v in (b["parts"] or {}).items()
                                   if k not in ("needy_queries", "needy_odds", "why")}} for b in batch]
    out += [f'<h2 id="batch-title">{batch_title}</h2><p>{len(batch)} URLs in fetch order: new URLs by the ordering '
            "policy's priority, with its parts and the needy queries the URL may answer, each with the odds it enters "
            "that query's top K; refreshes (stored pages fetched again) by the refresh policy's value, with why.</p>",
            '<div class="scroll">', _table("batch", [("rank", "rank"), ("url", "URL"), ("kind", "kind"),
                                                     ("policy", "policy"), ("priority", "priority"),
                                                     ("why", "why"), ("parts", "parts"),
                                                     ("needy_queries", "needy queries (odds)"),
                                                     ("in_links", "in-links"), ("pagerank", "PageRank")],
                                   rows, key="rank"), "</div>",
            "<h3>Needy queries</h3>",
            _table("needy-queries", [("rank", "rank"), ("query", "query"), ("frequency", "frequency"),
                                     ("improvability", "improvability"), ("neediness", "neediness")],
                   t["needy_queries"], key="rank"),
            "<h2>Hosts</h2>", '<div class="scroll">', _table("hosts", _HOST_COLUMNS, t["hosts"], key="host"), "</div>",
            "<h3>Origins held out of the batches</h3><p>Origins that did not answer (or answered without a page): "
            "their URLs stay in the frontier and take no batch slot until a probe in the cycle named answers.</p>",
            '<div class="scroll">', _table("origins-held", _HELD_COLUMNS, t["origins_held"], key="origin"),
            "</div>",
            "<h2>Model fits</h2>"]
    series = fit_series(t["model_runs"])
    if series:
        out.append(_fits_plot(series))
    newest = {r["model"]: r for r in t["model_runs"]}
    fits = [{"model": m, "cycle": r["cycle"], "version": r["version"],
             "metrics": {k: v for k, v in (r["metrics"] or {}).items() if not isinstance(v, list | dict)}}
            for m, r in sorted(newest.items())]
    out.append(_table("fits", [("model", "model"), ("cycle", "cycle"), ("version", "version"),
                               ("metrics", "metrics")], fits, key="model"))
    return out + _settings_section(t.get("settings", []))  # a snapshot of an earlier release has none
