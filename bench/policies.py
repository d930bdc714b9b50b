"""Do the crawl-ordering papers' findings hold here? Every policy through the simulator on four snapshots.

- ``dev-docs``: the real WARC of eight documentation sites (``../shared/corpus/dev-docs.warc.gz``), 8 cycles of 100.
- ``py-web-docs``: the real WARC of six more (pandas, SQLAlchemy, Flask, Werkzeug, Jinja, bash), built from
  ``bench/snapshots/py-web-docs.json`` into ``data/py-web-docs.warc.gz`` (see :func:`build_command`; not
  committed), 11 cycles of 100.
- ``sci-docs``: the real WARC of five more (Dask, Celery, SymPy, Django REST framework, Pygments), built likewise
  from ``bench/snapshots/sci-docs.json``, 8 cycles of 150.
- ``generated``: the demo web at ``--pages`` pages (20,000 by default) with its own first-day query log. Its wall
  time is the simulator's speed goal: all policies under 10 minutes.

The real snapshots' workload (:func:`real_texts`) is real text with synthetic frequencies: the query texts
(CodeSearchNet web queries; Stack Overflow SQL titles; StackExchange unix, programmers and webmasters titles) and
the ``<title>`` of every 2xx HTML page of the snapshot itself (real search logs hold many navigational queries),
``--queries`` of them drawn by a seeded shuffle with a Zipf law, f = ceil(1000 / r) at rank r (no public
frequencies exist for these sites). Each text source's count is printed once per snapshot.

``--runs K`` repeats each snapshot K times (:mod:`crawlcycle.evaluation.policy_lab`): run 0 starts from every host's
home page with the base workload (real snapshots: query shuffle seed 7), run r > 0 from a random page per host with the
query texts reshuffled (real snapshots, seed 7 + r) or the frequencies reassigned (generated). Every order is
judged by the reference ranker and by each judge of the panel, engines we did not write (``bm25s`` with and without
stemming, over the visible and the main text, and ``tantivy`` with a boosted title and a capped body;
:mod:`crawlcycle.evaluation.judge`); the standing reports each judge's ratio to the strongest rival held fixed and
the panel minimum, and draws them (``bench/results/panel.png``).
``--policies a,b`` runs only those policies; the others keep their results in bench/results, and the tables and
findings read them beside the new ones (from their curves in ``--work``, as a run of every policy left them; the
findings whose policies are missing are skipped);
``--set KEY=VALUE`` (repeatable) overrides a setting for every snapshot, after the snapshot's own batch size;
``--cycles N`` runs N cycles instead of each snapshot's own (a short check, not the benchmark).

``--compare REV`` is the regression check of a change that can touch the order (sums, scores, models, batch
assembly, parsing, the lab): hybrid and the two strongest rivals of each snapshot's committed results (or
``--policies``) at git revision REV and in this tree, on the same runs, each side with its own code and its own
ground truth; it prints each policy's % of ideal per run and judge at 5 % and 10 %, before → after (change), and
whether hybrid moved by more than a point in any run (``bench/compare.py``). bench/results is left as it is.

Every run also runs the reference ordering ``oracle`` once per judge (``oracle`` by the reference ranker's true
impact, ``oracle_bm25s`` by the bm25s judge's; ``crawl_metrics.ORACLES``): shown in every table and plot as a
reference, never a rival. Each policy is measured against the best other policy of the same run (the ratio of their %
of ideal) and against that judge's oracle (the headroom captured: (policy − best rival) ÷ (oracle − best rival)).

Each snapshot writes ``bench/results/<snapshot>/`` (``curves.png`` of run 0, ``regret.png``: choice efficiency and
discovery per cycle of run 0 for hybrid, its best rival at the largest budget by the reference judge and the oracles,
``findings.md``, each policy's ``summary.json`` of each run as ``<policy>/run-<r>.json``) and prints each policy's mean
and spread of % of ideal per judge and budget, its ratio and headroom per run, and the findings judged on the means.
Curves, regret (``regret.csv``), fetch orders and working databases stay in ``--work/<snapshot>/run-<r>/``. The last
lines are ``policy_lab_seconds=`` (dev-docs policies' wall time summed over runs, ground truth excluded) and
``truth_pages_per_second=`` (dev-docs ground truth).
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import math
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import compare
import polars as pl
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.devtools import demo_web
from crawlcycle.evaluation import policy_lab
from crawlcycle.evaluation.crawl_metrics import BUDGETS, ORACLES
from crawlcycle.evaluation.judge import HTML_TYPES
from crawlcycle.evaluation.plots import plot_panel, plot_regret
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.settings import POLICIES, SettingsError
from crawlcycle.settings.sources import load_settings

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
RESULTS = ROOT / "bench" / "results"
USER_AGENT = "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)"
SPEED_GOAL_SECONDS = 600
REAL = ("dev-docs", "py-web-docs", "sci-docs")  # the real snapshots, pooled in bench/results/standing.md
PANEL_GOAL = 1.05  # hybrid's ratio to the strongest rival held fixed that every judge of the panel must see
TITLE = re.compile(rb"<title(?:\s[^>]*)?>(.*?)</title\s*>", re.S | re.I)


def build_command(name: str) -> str:
    """The command, run from the project root, that builds snapshot ``name`` from its spec."""
    return f".venv/bin/python ../shared/corpus/build_snapshot.py bench/snapshots/{name}.json data/{name}.warc.gz"


def built_warc(name: str) -> Path:
    """The WARC of a snapshot built from ``bench/snapshots/<name>.json``; stops, naming the build, without it."""
    warc = ROOT / "data" / f"{name}.warc.gz"
    if not warc.is_file():
        raise SystemExit(f"{warc} is missing: build it from {ROOT} with `{build_command(name)}`")
    return warc


def real_texts(warc: Path) -> list[str]:
    """Real text for the workload of a real snapshot: the query texts for the documentation sites and the
    ``<title>`` of every 2xx HTML page of ``warc`` (unescaped, whitespace collapsed, empty ones dropped).
    Prints how many texts each source gave."""
    q = SHARED / "queries"
    sources = {"csn_queries": q.joinpath("csn_queries.csv").read_text().splitlines()[1:],
               "staqc_sql_titles": [line.split("\t", 1)[1]
                                    for line in q.joinpath("staqc_sql_titles.tsv").read_text().splitlines()]}
    for site in ("programmers", "unix", "webmasters"):
        with gzip.open(q / f"topics.beir-v1.0.0-cqadupstack-{site}.test.tsv.gz", "rt") as f:
            sources[f"cqadupstack_{site}"] = [line.rstrip("\n").split("\t", 1)[1] for line in f]
    titles = []
    with warc.open("rb") as f:
        for rec in ArchiveIterator(f):  # the records html_pages counts
            if rec.rec_type != "response" or rec.http_headers is None:
                continue
            ctype = (rec.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
            if not (rec.http_headers.get_statuscode() or "").startswith("2") or ctype not in HTML_TYPES:
                continue
            if m := TITLE.search(rec.content_stream().read()):
                if title := " ".join(html.unescape(m.group(1).decode("utf-8", "replace")).split()):
                    titles.append(title)
    sources["page_titles"] = titles
    texts = [t for ts in sources.values() for t in ts]
    distinct = {t.strip().replace("\t", " ") for t in texts if t.strip()}  # as zipf_workload counts them
    print(f"{warc.name} texts: " + ", ".join(f"{k} {len(v)}" for k, v in sources.items())
          + f"; {len(texts)} in all, {len(distinct)} distinct", flush=True)
    return texts


def parse_value(raw: str) -> int | float | str:
    """A ``--set`` value as int, float or str (the settings coerce it to the setting's type)."""
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw


def write_workload(path: Path, workload: list[tuple[str, int]]) -> Path:
    path.write_text("".join(f"{q}\t{f}\n" for q, f in workload))
    return path


def read_workload(path: Path) -> list[tuple[str, int]]:
    return [(q, int(f)) for q, f in (line.rsplit("\t", 1) for line in path.read_text().splitlines() if line)]


@dataclass(frozen=True)
class Snapshot:
    """A snapshot to run: its WARC, the URL ending(s) of its hosts' home pages, the crawl's shape and the
    workload of run r."""

    warc: Path
    home: str | tuple[str, ...]
    batch: int
    cycles: int
    workload: Callable[[int], list[tuple[str, int]]]


@dataclass
class Runs:
    """One snapshot's runs: each run's summaries (policy -> summary), wall seconds and curves."""

    summaries: list[dict[str, dict]] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    curves: list[dict[str, pl.DataFrame]] = field(default_factory=list)


def run(name: str, r: int, warc: Path, queries: Path, seeds: Path, batch: int, cycles: int, work: Path,
        jobs: int, runs: Runs, policies: list[str], overrides: dict[str, Any]) -> None:
    """Run ``r`` of snapshot ``name``: ``policies`` and the oracle of each judge through the simulator in ``work``
    with the settings ``overrides``; results kept in ``runs``."""
    settings = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": batch, **overrides})
    policies = [*policies, *ORACLES.values()]
    t0 = time.perf_counter()
    summaries = simulate(settings, [warc], queries, seeds, policies, cycles, work,
                         progress=lambda m: print(f"  [{name} run {r} {time.perf_counter() - t0:6.0f} s] {m}",
                                                  flush=True) if "shard" not in m else None, jobs=jobs)
    wall = time.perf_counter() - t0
    out = RESULTS / name
    folder = {p: work / p for p in policies}
    if r == 0:
        shutil.copyfile(work / "curves.png", out / "curves.png")
        shown = ["hybrid"] if "hybrid" in summaries else []
        if shown and (got := policy_lab.against_best_rival(summaries, "hybrid", "reference",
                                                             policy_lab.budget_label(BUDGETS[-1]))):
            shown.append(got["rival"])
        shown += ORACLES.values()
        plot_regret({p: pl.read_csv(folder[p] / "regret.csv") for p in shown}, out / "regret.png",
                    f"{name} run 0")
    for policy in policies:  # the curves stay in the work folder: a summary per policy and run is kept
        (out / policy).mkdir(exist_ok=True)
        shutil.copyfile(folder[policy] / "summary.json", out / policy / f"run-{r}.json")
    for policy, s in summaries.items():
        print(f"{name} run {r} {policy}_seconds={s['seconds']}")
    pages = next(iter(summaries.values()))["snapshot_pages"]
    print(f"{name} run {r} all_policies_seconds={wall:.1f} (snapshot {pages} pages)")
    runs.summaries.append(summaries)
    runs.walls.append(wall)
    runs.curves.append({p: pl.read_csv(folder[p] / "curve.csv") for p in policies})
    for policy, summary in summaries.items():  # how much of the room above the best rival each policy took
        for judge in policy_lab.JUDGES:
            for budget in BUDGETS[-2:]:
                got = policy_lab.against_best_rival(summaries, policy, judge, policy_lab.budget_label(budget))
                if got and policy not in ORACLES.values():
                    headroom = "–" if got["headroom"] is None else f"{got['headroom']:.2f}"
                    print(f"{name} run {r} {policy} {judge} {budget:.0%}: ratio {got['ratio']:.2f}, headroom "
                          f"{headroom} (best rival {got['rival']})")
        means = summary["regret"]["reference"]["mean_from_cycle_3"]
        print(f"{name} run {r} {policy} regret (reference judge, cycles>=3): choice efficiency "
              f"{means['choice_efficiency']}, discovery {means['discovery']}")
    from crawlcycle.evaluation.crawl_metrics import engagement_text, waste_line

    for policy, summary in summaries.items():  # what the batch slots gave
        print(f"{name} run {r} {policy} slots: {waste_line(summary)}")
    for policy in ("hybrid", "q_overlap", "q_hybrid", "ml"):  # does the query-driven part of each policy engage?
        if policy in summaries:
            print(f"{name} run {r} {policy} engagement: {engagement_text(summaries[policy])}")


def report(name: str, runs: Runs) -> list[str]:
    """Each policy's mean, sd and range of % of ideal per judge and budget, one line per policy and judge."""
    pct = policy_lab.aggregate(runs.summaries)
    lines = []
    for policy, by_judge in pct.items():
        for judge, by_budget in by_judge.items():
            cells = [f"{b} " + ("—" if s is None else f"{100 * s.mean:.1f} sd {100 * s.sd:.1f} "
                                                   f"[{100 * s.lo:.1f}, {100 * s.hi:.1f}] n={s.n}")
                     for b, s in by_budget.items()]
            lines.append(f"{name} {policy} {judge}: " + "; ".join(cells))
    from crawlcycle.evaluation.crawl_metrics import engagement_text  # the query-using policies' engagement, run by run

    for policy in ("hybrid", "q_overlap", "q_hybrid", "ml"):
        for r, summaries in enumerate(runs.summaries):
            if policy in summaries:
                lines.append(f"{name} run {r} {policy} engagement: {engagement_text(summaries[policy])}")
    return lines


def lab_speed(runs: Runs) -> tuple[float, float]:
    """(wall seconds of the policies summed over runs, ground truth excluded; ground-truth pages per second),
    nan where the summaries do not time the ground truth."""
    truth = [next(iter(s.values())).get("truth_seconds") for s in runs.summaries]
    if any(t is None for t in truth):
        return math.nan, math.nan
    pages = next(iter(runs.summaries[0].values()))["snapshot_pages"]
    # a run whose ground truth came from the cache took ~0 s for it: the slowest run is the one that built it
    return sum(runs.walls) - sum(truth), pages / max(truth) if max(truth) > 0 else math.nan


def kept(name: str, runs: Runs, work: Path, policies: list[str]) -> None:
    """The policies not run this time join ``runs`` from their results in bench/results, run by run, and their curves
    from ``work`` where a run of every policy left them there: hybrid re-run alone is read against the rivals kept.
    A policy kept without its curves is in the tables, not in the findings that read curves."""
    committed = committed_runs(name)
    others = sorted({p for run in committed[:len(runs.summaries)] for p in run} - set(runs.summaries[0]))
    for r, (summaries, curves) in enumerate(zip(runs.summaries, runs.curves, strict=True)):
        for policy in others:
            if policy not in committed[r]:
                continue
            summaries[policy] = committed[r][policy]
            if (curve := work / f"run-{r}" / policy / "curve.csv").is_file():
                curves[policy] = pl.read_csv(curve)
    if others:
        print(f"{name}: kept the results of {', '.join(others)} from bench/results/{name}", flush=True)


def committed_runs(name: str) -> list[dict[str, dict]]:
    """The runs of a snapshot as bench/results keeps them: per run, policy -> summary."""
    files = sorted((RESULTS / name).glob("*/run-*.json"))
    runs: dict[str, dict[str, dict]] = {}
    for f in files:
        runs.setdefault(f.stem, {})[f.parent.name] = json.loads(f.read_text())
    return [runs[r] for r in sorted(runs)]


def standing() -> list[str]:
    """Hybrid against the strongest rival held fixed over every run of the real snapshots in bench/results
    (``policy_lab.held_fixed``), written to ``bench/results/standing.md``; no lines while one snapshot lacks runs."""
    runs = [run for name in REAL for run in committed_runs(name)]
    if not all(committed_runs(name) for name in REAL) or not (rows := policy_lab.held_fixed(runs)):
        return []
    lines = [f"### Hybrid against the strongest rival held fixed, {len(runs)} runs of {', '.join(REAL)}", "",
             "% of ideal, mean over every run of the three snapshots, by each judge of the panel (the reference "
             "ranker and engines we did not write, `crawlcycle.evaluation.judge.PANEL`); the rival is the one policy "
             "with the highest mean, among those judged by that judge in every run; the lowest ratio is that of the "
             "run where hybrid fares worst against it; headroom is taken on the means (oracles run for "
             f"{', '.join(ORACLES)} only). The panel minimum is the lowest ratio of the means over the judges "
             f"(goal {PANEL_GOAL:.2f}×); `panel.png` draws them.", "", *rows, ""]
    if missing := [j for j in policy_lab.JUDGES if j not in policy_lab.judged_by(runs)]:
        lines += [f"No run is judged by {', '.join(missing)} yet.", ""]
    (RESULTS / "standing.md").write_text("\n".join(lines))
    plot_panel(policy_lab.held_fixed_figures(runs), RESULTS / "panel.png",
               f"hybrid against the strongest rival held fixed, per judge ({len(runs)} runs)", PANEL_GOAL)
    return lines


def run_inputs(work: Path, snap: Snapshot, pages: dict[str, list[str]], r: int) -> tuple[Path, Path]:
    """The seeds and the workload of run ``r`` of a snapshot, written into ``work``: (seeds, queries)."""
    work.mkdir(parents=True, exist_ok=True)
    seeds = work / "seeds.txt"
    seeds.write_text("".join(u + "\n" for u in policy_lab.seed_set(pages, r, snap.home)))
    return seeds, write_workload(work / "queries.tsv", snap.workload(r))


def real_snapshot(name: str, queries: int) -> Snapshot:
    """A real snapshot (``REAL``) as the lab runs it: its WARC, home pages, batches and workload of ``queries``."""
    warc = SHARED / "corpus" / "dev-docs.warc.gz" if name == "dev-docs" else built_warc(name)
    texts = real_texts(warc)

    def workload(r: int) -> list[tuple[str, int]]:
        return policy_lab.zipf_workload(texts, queries, policy_lab.WORKLOAD_SEED + r)

    if name == "dev-docs":
        return Snapshot(warc, "/index.html", batch=100, cycles=8, workload=workload)
    if name == "py-web-docs":
        # 1,100 fetches, ~21 % of the 5,125 pages the simulator judges (dev-docs: 800 of 3,963): one host holds
        # 80 % of them and per_host_cap (40) bounds its share of each batch, so the rest goes to the small hosts,
        # links out of the snapshot and retries, and 10 % must still be reached. bash-doc has no index.html: its
        # home page is the Bash Reference Manual.
        return Snapshot(warc, ("/index.html", "/bashref.html"), batch=100, cycles=11, workload=workload)
    # sci-docs: 1,200 fetches, ~20 % of the 6,008 responses the simulator judges (1,891 HTML pages, the rest images,
    # style sheets and scripts the pages link to), as on dev-docs
    return Snapshot(warc, "/index.html", batch=150, cycles=8, workload=workload)


def compare_revision(args: argparse.Namespace, revision: tuple[str, Path], snapshots: dict[str, Snapshot],
                     policies: list[str] | None, overrides: dict[str, Any]) -> None:
    """``--compare REV``: the policies (default hybrid and the strongest rivals of each snapshot's committed results)
    at REV (``revision``: its commit and crawlcycle command) and in this tree on the same runs; prints each one's % of
    ideal per run and the changes."""
    sha, before = revision
    here = Path(sys.executable).parent / "crawlcycle"
    lines = []
    for name, snap in snapshots.items():
        chosen = policies or ["hybrid", *compare.strongest_rivals(RESULTS / name)]
        pages = policy_lab.html_pages(snap.warc)
        figures: dict[str, list[dict]] = {"before": [], "after": []}
        for r in range(args.runs):
            work = args.work / "compare" / name / f"run-{r}"
            seeds, queries = run_inputs(work, snap, pages, r)
            for side, command in (("before", before), ("after", here)):
                print(f"compare {name} run {r}: {', '.join(chosen)} at {sha[:12] if side == 'before' else 'this tree'}",
                      flush=True)
                summaries = compare.simulate(command, work / side, snap.warc, queries, seeds, chosen,
                                             args.cycles or snap.cycles, snap.batch, USER_AGENT, overrides, args.jobs)
                figures[side].append(compare.figures(summaries))
        lines += compare.report(name, sha[:12], figures["before"], figures["after"])
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=20_000, help="pages of the generated snapshot")
    ap.add_argument("--queries", type=int, default=3000, help="queries of the real snapshots' workloads")
    ap.add_argument("--runs", type=int, default=1, help="runs per snapshot, each from other seeds and frequencies")
    ap.add_argument("--cycles", type=int, help="cycles of every run instead of the snapshot's own (a short check)")
    ap.add_argument("--jobs", type=int, default=1, help="policies simulated in parallel")
    ap.add_argument("--work", type=Path, default=ROOT / "data" / "bench-policies")
    ap.add_argument("--only", choices=["dev-docs", "py-web-docs", "sci-docs", "generated"], help="run one snapshot")
    ap.add_argument("--policies", help="comma-separated policies to run (default: all; with --compare: hybrid and "
                                        "the two strongest rivals of the committed results): " + ", ".join(POLICIES))
    ap.add_argument("--compare", metavar="REV",
                    help="run the policies at git revision REV and in this tree on the same runs and print the "
                         "differences (bench/compare.py); bench/results is left as it is")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="override a setting for every snapshot (repeatable), e.g. --set duckdb_threads=1")
    args = ap.parse_args()
    if args.runs < 1 or args.jobs < 1 or (args.cycles is not None and args.cycles < 1):
        ap.error("--runs, --jobs and --cycles must be at least 1")
    chosen = [p.strip() for p in (args.policies or ",".join(POLICIES)).split(",") if p.strip()]
    if unknown := sorted(set(chosen) - set(POLICIES)):
        ap.error(f"--policies: unknown policy {', '.join(unknown)}; choose from {', '.join(POLICIES)}")
    if not chosen:
        ap.error("--policies: name at least one policy")
    policies = [p for p in POLICIES if p in chosen]
    overrides: dict[str, Any] = {}
    for item in args.overrides:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            ap.error(f"--set: expected KEY=VALUE, got {item!r}")
        overrides[key.strip()] = parse_value(value.strip())
    try:
        load_settings(environ={}, overrides={"user_agent": USER_AGENT, **overrides})
    except SettingsError as e:
        ap.error(f"--set: {e}")
    try:  # the revision first: a wrong one fails before any snapshot is read
        revision = compare.revision(args.compare, args.work) if args.compare else None
    except compare.CompareError as e:
        raise SystemExit(f"--compare: {e}") from None
    snapshots = {name: real_snapshot(name, args.queries) for name in REAL if args.only in (None, name)}
    if args.only in (None, "generated"):
        web = demo_web.generate(args.work / "generated-web", hosts=40, pages=args.pages)
        log = read_workload(sorted(web.query_log_dir.glob("dt=*/queries.tsv"))[0])
        snapshots["generated"] = Snapshot(
            web.warc, "/", batch=max(100, args.pages // 30), cycles=5,
            workload=lambda r: log if r == 0 else policy_lab.shuffled_frequencies(log, policy_lab.WORKLOAD_SEED + r))
    if args.compare:
        try:
            compare_revision(args, revision, snapshots, policies if args.policies else None, overrides)
        except compare.CompareError as e:
            raise SystemExit(f"--compare: {e}") from None
        return
    results = {}
    for name, snap in snapshots.items():
        for policy in (*policies, *ORACLES.values()):  # the policies not run keep their results
            shutil.rmtree(RESULTS / name / policy, ignore_errors=True)
        (RESULTS / name).mkdir(parents=True, exist_ok=True)
        pages = policy_lab.html_pages(snap.warc)
        results[name] = Runs()
        for r in range(args.runs):
            work = args.work / name / f"run-{r}"
            seeds, queries = run_inputs(work, snap, pages, r)
            run(name, r, snap.warc, queries, seeds, snap.batch, args.cycles or snap.cycles, work, args.jobs,
                results[name], policies, overrides)
        kept(name, results[name], args.work / name, policies)
    for name, runs in results.items():
        shown = sorted(set.intersection(*(set(c) for c in runs.curves)))
        gains = {j: {p: statistics.fmean(policy_lab.late_gain(c[p], j) for c in runs.curves) for p in shown}
                 for j in policy_lab.JUDGES}
        lines = [f"### {name}", "",
                 f"% of ideal, mean ± sample standard deviation over {args.runs} run(s); each run starts from other "
                 "seeds and query frequencies.", "", *policy_lab.table(runs.summaries), "",
                 "Range (min–max) over the runs:", "", *policy_lab.table(runs.summaries, spread="range"), ""]
        if pairs := policy_lab.paired(runs.summaries):
            lines += ["hybrid ÷ the best other policy of the same run, and the headroom it captured, (hybrid − best "
                      "rival) ÷ (oracle − best rival) (% of ideal of hybrid, the rival and the oracle in brackets):",
                      "", *pairs, ""]
        lines += ["Every policy's ratio to the best other policy of the same run and headroom captured, mean "
                  "(min–max) over the runs:", "", *policy_lab.headroom_table(runs.summaries), ""]
        lines += policy_lab.findings(name, runs.summaries, gains)
        if name == "generated":
            wall = statistics.fmean(runs.walls)
            met = "met" if wall < SPEED_GOAL_SECONDS else "missed"
            lines += ["", f"All {len(policies)} policies on {args.pages:,} pages: {wall:.0f} s per run "
                          f"(goal {SPEED_GOAL_SECONDS} s: {met})."]
        text = "\n".join(lines) + "\n"
        (RESULTS / name / "findings.md").write_text(text)
        print("\n".join(report(name, runs)))
        print(text)
    if lines := standing():
        print("\n".join(lines))
    if "dev-docs" in results:
        lab_seconds, truth_rate = lab_speed(results["dev-docs"])
        print(f"policy_lab_seconds={lab_seconds:.1f}")
        print(f"truth_pages_per_second={truth_rate:.1f}")

if __name__ == "__main__":
    main()
