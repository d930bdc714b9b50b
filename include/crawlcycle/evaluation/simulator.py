"""Offline evaluation of ordering and refresh policies on web snapshots (WARC files), frozen or changing: the runs.

This module plans the runs, serves each its web, runs their crawls side by side and writes their outputs; what a run
is measured by is :mod:`crawlcycle.evaluation.crawl_metrics` (and :mod:`crawlcycle.evaluation.repository`), its plots
:mod:`crawlcycle.evaluation.plots`.

Each run (an ordering policy with a refresh policy) runs the real cycle stages (``stages.init``,
``stages.run_cycle``) against the web served on loopback by :mod:`crawlcycle.devtools.warc_server` (a URL not in
the snapshot answers 404), in its own database and data folder under ``<out>/<run>/work/``. Every cycle reads the
same workload: the query file is copied into one query-log partition per cycle (``dt=start_date + k``).

The web is one snapshot (its WARC files), or a series of versions of the same hosts, one WARC file each with the
cycle it starts at (``starts``; the first starts at cycle 1): cycle k's web serves each URL at its version then,
switching ``at-start`` or ``drawn`` (each URL at a cycle drawn with ``switch_seed`` between the two versions'
starts; :class:`crawlcycle.devtools.warc_server.Series`). Each run gets its own server, whose clock it sets to the
cycle before the cycle runs, so outputs do not depend on ``jobs``. A single snapshot does not change, so its runs
refresh nothing (``refresh_policy`` none) unless the settings name a refresh policy; a series keeps the setting.
``refresh_policies`` runs each refresh policy, as ``policies`` runs each ordering policy.

The ground truth (``crawlcycle.evaluation.ground_truth``: every page's true impact and each query's top K, by the
reference ranker and by each judge of the panel) is computed once per web, workload, settings and code, and kept in
the cache folder (``--cache``, default ``<data_dir>/simulation-cache``) with the parse cache that its parse fills:
every run's cycles read the parse results from there instead of parsing the same bytes again. A series has one per
cycle, of the web served at that cycle (``cycle_truths``); cycles serving the same web share one. Runs go side by
side in ``jobs`` processes; each writes only its own folder.

A snapshot has no server to spare, so the simulated crawl waits for no delay (``min_delay``, ``delay_factor`` 0,
``obey_crawl_delay`` off; robots.txt rules still apply), and the fetch gate's error share only warns: links out of
the snapshot all fail. The crawl never leaves loopback: ``connect_to`` sends every host the web names (record,
link and redirect hosts, seeds), and every other host under the same top-level domains, to the run's server.

Outputs per run (in ``<out>``, or ``<out>/<run>/`` when several run: the ordering policy's name, the refresh
policy's when only those vary, ``<policy>+<refresh policy>`` when both do):

- ``order.csv``: on one snapshot ``url,cycle,rank``, every URL the fetcher tried (not deferred, not
  robots-disallowed), once, in fetch order; on a series ``cycle,url,rank,kind,version,outcome``, every fetch of a
  batch URL, refreshes included: ``kind`` new or refresh (``batches.kind``), ``version`` the version (1-based) the
  web served it from, ``outcome`` what the check of a stored page found (``page_checks.outcome``), else
  ``fetch_log.outcome``. A URL outside the snapshot is a fetch that found nothing: a 404, or for ``https`` a failed
  TLS handshake with the plain-HTTP snapshot server.
- ``curve.csv``: one row per first fetch of a URL: ``fetched`` (fetches so far), ``fraction`` (of the pages of
  cycle 1's web), ``policy`` and ``ideal`` (cumulative true impact share in cycle 1's web; the ideal fetches pages
  by descending true impact), the same by each judge of the panel (``policy_<judge>``, ``ideal_<judge>``),
  ``p_cs`` (Cho's crawl-and-stop: share of the fetched pages that are among the top ``fetched`` pages by
  in-degree) and ``p_st`` (share of the hot pages fetched; hot = top ``HOT_SHARE`` of pages by in-degree in
  the full snapshot link graph). A fetch credits the page it ended on (the redirect target), once.
- ``quality.csv``: per cycle the repository's user-centric quality by each judge, freshness and age
  (:mod:`crawlcycle.evaluation.repository`), the indexed pages and the batch's new URLs and refreshes.
- ``changes.csv`` (a series only): per cycle but the last, every stored page with what each change model predicted
  for the next fetch (``p_poisson``, ``p_bursts``, and ``p_changed``, the one the run used) and whether the next
  cycle's web holds another text (``changed``); ``summary.json``'s ``calibration`` bins them and gives each model's
  Brier score, over the predictions for the cycles from the first switch on; ``refresh_outcomes`` counts what the
  refreshes of those cycles found (``outcome`` of ``order.csv``).
- ``summary.json``: per budget in ``BUDGETS`` (share of the snapshot's pages) ``pct_of_ideal``, ``p_cs`` and
  ``p_st``, null when the run fetched fewer URLs than the budget (``budgets``: the reference judge;
  ``budgets_by_judge``: each judge); plus counts, the run's seconds and the ground truth's; ``versions`` and
  ``switch`` of the web; ``repository``: each cycle's figures of ``quality.csv``, ``first_switch`` (the first cycle
  a URL moved to its next version; null for one snapshot) and each figure's mean over all cycles and from the
  first switch on; ``refresh``: each cycle's refresh figures of ``v_cycle_summary`` (``FRESHNESS``); and
  ``engagement``, whether the query-driven part of the policy engaged: ``cycles``, each cycle's figures of
  ``v_cycle_summary`` (``ENGAGEMENT``: needy queries, those with frontier candidates, frontier pages in sketches, the
  next batch's share of URLs with query impact and of priority mass from queries; null where the policy has no such
  part), and ``mean_from_cycle_3``, each figure's mean over the cycles from ``ENGAGEMENT_FROM`` on that have it
  (null: none), once the first cycles' fits have data to learn from; and ``waste``, what each cycle's batch slots
  gave (``WASTE``) with the shares of slots without a page and of slots to origins that did not answer from cycle 3
  on (``waste``).
- ``regret.csv``: per judge and fetched batch (``REGRET``, :func:`crawl_metrics.batch_regret`): the true impact of
  its new URLs, of the best batch of as many from the same frontier and from every page not fetched yet (greedy under
  the per-host cap, of the pages robots.txt allows), choice efficiency (chosen ÷ best from the frontier) and discovery
  (best from the frontier ÷ best from all); also in the crawl's database (``v_batch_regret``, with the better URLs each
  batch passed over), and in ``summary.json`` under ``regret`` with the means from cycle ``ENGAGEMENT_FROM`` on.
- ``curve.png``: both impact curves; ``quality.png``: quality and freshness per cycle; ``regret.png``: choice
  efficiency and discovery per cycle. Several runs also give ``<out>/curves.png`` and ``<out>/quality.png``.

Besides the policies, the reference ordering ``oracle`` runs by the true impact of each judge (``ORACLES``: run
``oracle`` by the reference judge's, ``oracle_<judge>`` by another's, read from the file the ground truth keeps,
``Truth.impact_file``, of cycle 1's web); its ``summary.json`` names the judge (``oracle_judge``), and plots mark it as
a reference.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import polars as pl

from crawlcycle.devtools.warc_server import SWITCHES, Series, check_warc, host_key, loopback_routes, serve
from crawlcycle.evaluation import repository
from crawlcycle.evaluation.crawl_metrics import (
    ORACLES,
    batch_regret,
    curve,
    cycle_rows,
    engagement,
    fetch_order,
    fetches,
    label,
    regret_summary,
    summarize,
    waste,
)
from crawlcycle.evaluation.ground_truth import JUDGES, Truth, cycle_truths, ground_truth
from crawlcycle.evaluation.plots import plot, plot_regret
from crawlcycle.pipeline import stages
from crawlcycle.ranking.query_log import write_partitions
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import with_overrides
from crawlcycle.ui.report import FRESHNESS


@dataclass(frozen=True)
class Run:
    """One crawl of the simulation: an ordering policy with a refresh policy, and the folder of its outputs."""

    name: str
    policy: str
    refresh_policy: str
    folder: Path
    judge: str | None = None  # the judge whose true impact a reference run (ORACLES) orders by


def plan_runs(policies: list[str], refresh_policies: list[str], out: Path) -> list[Run]:
    """Every ordering policy (or reference run, ``ORACLES``) with every refresh policy; each run's name and folder
    (``out`` itself for one run)."""
    judges = {name: judge for judge, name in ORACLES.items()}
    runs = []
    for policy in policies:
        for refresh in refresh_policies:
            name = (f"{policy}+{refresh}" if len(policies) > 1 and len(refresh_policies) > 1
                    else refresh if len(refresh_policies) > 1 else policy)
            runs.append(Run(name, "oracle" if policy in judges else policy, refresh,
                            out / name if len(policies) * len(refresh_policies) > 1 else out, judges.get(policy)))
    return runs


def run_crawl(base: Settings, run: Run, web: Series, hosts: set[str], query_file: Path, seeds: Path, cycles: int,
              truths: list[Truth], progress: Callable[[str], None]
              ) -> tuple[Settings, list[dict], pl.DataFrame | None]:
    """``cycles`` real crawl cycles of ``run`` over ``web``, served by a server of its own whose clock is the cycle,
    in a fresh database under ``<run folder>/work``; the settings it ran with, each cycle's repository figures
    (measured as the cycle closes, against ``truths``, the ground truth of each cycle) and, on a series, what the
    change models predicted against what changed (``repository.predicted_changes``; else None)."""
    work = run.folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    start = date.fromisoformat(base.start_date)
    days = [start + timedelta(days=k) for k in range(cycles)]
    hashes = [repository.live_hashes(t) for t in truths]
    rows, predicted = [], []
    with serve(web) as server:
        settings = with_overrides(base, {
            "policy": run.policy, "refresh_policy": run.refresh_policy, "db_path": str(work / "crawl.duckdb"),
            "data_dir": str(work / "data"), "seeds_file": str(seeds), "query_log_dir": str(work / "query_log"),
            "end_date": days[-1].isoformat(), "connect_to": loopback_routes(hosts | web.hosts(), server.port),
            "allow_networks": "127.0.0.0/8", "min_delay": 0, "delay_factor": 0, "obey_crawl_delay": False,
            # links out of a snapshot all fail (404, or TLS for https): a high error share is expected there
            "gate_warn": ",".join(filter(None, [base.gate_warn, "error_share"])),
            # cycle 1's web, as the curve judges it
            "oracle_impact": str(truths[0].impact_file(run.judge)) if run.judge else ""})
        write_partitions(query_file, work / "query_log", days)
        stages.init(settings)
        t0 = time.perf_counter()
        for k, day in enumerate(days, 1):
            server.set_time(k)
            summary = stages.run_cycle(settings, day, progress=lambda m: None)
            rows.append(repository.measure(settings, k, truths, hashes))
            if k < cycles and len(web.webs) > 1:
                predicted.append(repository.predicted_changes(settings, k, hashes[k]))
            spent = time.perf_counter() - t0
            wasted = "" if summary["waste_share"] is None else f" (waste {100 * summary['waste_share']:.0f} %)"
            progress(f"{run.name}: cycle {k}/{cycles} done, {summary['fetched']} fetched{wasted}, quality "
                     f"{_figure(rows[-1]['quality'])}, freshness {_figure(rows[-1]['freshness'])}, {spent:.0f} s; "
                     f"about {spent / k * (cycles - k):.0f} s left for {run.name}")
    return settings, rows, pl.concat(predicted) if predicted else None


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _say(message: str) -> None:
    print(message, flush=True)  # a worker's output is a pipe: unflushed lines would come when it ends


def _run_outputs(base: Settings, run: Run, web: Series, hosts: set[str], query_file: Path, seeds: Path,
                 cycles: int, truths: list[Truth], about: dict, progress: Callable[[str], None] = _say
                 ) -> tuple[dict, pl.DataFrame, list[dict]]:
    """Run one crawl and write its outputs into its folder; (summary, curve, repository rows). Top-level, for a
    process pool."""
    t0 = time.perf_counter()
    settings, rows, predicted = run_crawl(base, run, web, hosts, query_file, seeds, cycles, truths, progress)
    seconds = time.perf_counter() - t0
    order = fetch_order(settings)
    outcomes = None
    if len(web.webs) > 1:
        tried = fetches(settings, web)
        tried.write_csv(run.folder / "order.csv")
        outcomes = dict(tried.filter((pl.col("kind") == "refresh") & (pl.col("cycle") >= (web.first_switch() or 0)))
                        .group_by("outcome").len().sort("outcome").iter_rows())
    else:
        order.select("url", "cycle", "rank").write_csv(run.folder / "order.csv")
    truth = truths[0]
    points = curve(order, truth)
    points.write_csv(run.folder / "curve.csv")
    plot({run.name: points}, run.folder / "curve.png", f"{run.name}: {cycles} cycles of {settings.batch_size}")
    repository.write_csv(rows, run.folder / "quality.csv")
    if predicted is not None:
        predicted.write_csv(run.folder / "changes.csv")
    repository.plot({label(run.name): rows}, run.folder / "quality.png", f"{run.name}: {cycles} cycles of "
                    f"{settings.batch_size}", web.first_switch())
    regret = batch_regret(settings, truth)
    regret.write_csv(run.folder / "regret.csv")
    plot_regret({run.name: regret}, run.folder / "regret.png", run.name)
    by_judge = {judge: summarize(points, truth, judge) for judge in JUDGES}
    summary = {"policy": run.policy, "oracle_judge": run.judge, "refresh_policy": run.refresh_policy, "cycles": cycles,
               "batch_size": settings.batch_size, **about, "snapshot_pages": truth.pages.height,
               "fetched": order.height, "hot_pages": int(truth.pages["hot"].sum()), "total_impact": truth.total(),
               "budgets": by_judge["reference"], "budgets_by_judge": by_judge,
               "repository": repository.summary(rows, web.first_switch()), "refresh": cycle_rows(settings, FRESHNESS),
               "refresh_outcomes": outcomes,
               "calibration": None if predicted is None else repository.calibration(
                   predicted.filter(pl.col("cycle") + 1 >= (web.first_switch() or 0))),
               "engagement": engagement(settings), "waste": waste(settings), "regret": regret_summary(regret),
               "seconds": round(seconds, 2)}
    return summary, points, rows


def _share_cores(jobs: int) -> None:
    """Give each of ``jobs`` worker processes its share of the cores: OpenMP (the S' trees) spinning on more threads
    than there are free cores slows a fit down several times."""
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = threads


def simulate(base: Settings, snapshots: list[Path], query_file: Path, seeds: Path, policies: list[str],
             cycles: int, out: Path, progress: Callable[[str], None] = print, jobs: int = 1,
             cache: Path | None = None, starts: list[int] | None = None, switch: str = "drawn", switch_seed: int = 0,
             refresh_policies: list[str] | None = None) -> dict[str, dict]:
    """Run each ordering policy with each refresh policy, ``jobs`` at a time, and write their outputs; return each
    run's summary by its name (with ``truth_seconds``, the time the ground truth took in this call: about 0 when it
    came from ``cache``). ``snapshots`` are the files of one snapshot, or with ``starts`` (the cycle each starts at)
    the versions of a series. ``refresh_policies`` None: the setting on a series, ``none`` on one snapshot unless
    the settings name one."""
    for path in snapshots:
        check_warc(path, "--snapshot")
    for flag, path in (("--queries", query_file), ("--seeds", seeds)):
        if not path.is_file():
            raise FileNotFoundError(f"{flag}: {path} does not exist")
    if query_file.suffix not in (".tsv", ".parquet"):
        raise ValueError(f"--queries: {query_file} must be a .tsv or .parquet query-log file")
    if cycles < 1:
        raise ValueError(f"--cycles must be at least 1, got {cycles}")
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if switch not in SWITCHES:
        raise ValueError(f"--switch must be one of {', '.join(SWITCHES)}, got {switch!r}")
    if starts is not None:
        _check_starts(snapshots, starts, cycles)
    out = out.resolve()  # settings paths must be absolute (the quality gates' context needs it)
    out.mkdir(parents=True, exist_ok=True)
    cache = (cache or Path(base.data_dir) / "simulation-cache").resolve()
    base = with_overrides(base, {"parse_cache": str(cache / "parse.sqlite")})
    t0 = time.perf_counter()
    if starts is None:
        web = Series.single(snapshots)
        truth, cached = ground_truth(base, snapshots, query_file, cache)
        truths, per_cycle = [truth] * cycles, []
    else:
        web = Series([([p], s) for p, s in zip(snapshots, starts, strict=True)], switch, switch_seed)
        truths, per_cycle = cycle_truths(base, web, cycles, query_file, cache)
        truth, cached = truths[0], per_cycle[0]["cached"]
    truth_seconds = time.perf_counter() - t0
    if jobs > 1:
        base = with_overrides(base, {"duckdb_threads": max(1, base.duckdb_threads // jobs)})
    if not truth.pages.height:
        raise ValueError(f"--snapshot: no 2xx HTML page in {', '.join(map(str, snapshots))}")
    kept = sum(1 for c in per_cycle if c.get("cached")) if per_cycle else int(cached)
    computed = sum(1 for c in per_cycle if c.get("cached") is False) if per_cycle else int(not cached)
    progress(f"ground truth: {truth.pages.height} pages, total impact {truth.total():g}, "
             f"{int((truth.pages['impact'] > 0).sum())} pages with impact"
             + (f" in cycle 1; {computed + kept} webs over {cycles} cycles, {computed} computed, {kept} kept"
                if per_cycle else "")
             + f" ({'kept from ' if cached else 'computed in '}{truth.folder}, {truth_seconds:.1f} s)")
    (out / "truth.json").write_text(json.dumps({"folder": str(truth.folder), "cached": cached,
                                                "seconds": round(truth_seconds, 2), "cycles": per_cycle},
                                               indent=1) + "\n")
    if refresh_policies is None:
        given = starts is not None or "refresh_policy" in base.sources
        refresh_policies = [base.refresh_policy if given else "none"]
    runs = plan_runs(policies, refresh_policies, out)
    seed_hosts = {host_key(urlsplit(line.strip()).netloc) for line in seeds.read_text().splitlines()}
    hosts = set().union(seed_hosts, *(t.hosts for t in truths))
    about = {"versions": [{"version": i + 1, "files": [str(f) for f in w.files], "start": s}
                          for i, (w, s) in enumerate(zip(web.webs, web.starts, strict=True))] if starts else None,
             "switch": switch if starts else None, "switch_seed": switch_seed if starts else None}
    args = {r.name: (base, r, web, hosts, query_file, seeds, cycles, truths, about) for r in runs}
    summaries: dict[str, dict] = {}
    curves: dict[str, pl.DataFrame] = {}
    qualities: dict[str, list[dict]] = {}
    started = time.perf_counter()

    def finished(run: Run, summary: dict, points: pl.DataFrame, rows: list[dict]) -> None:
        summaries[run.name] = {**summary, "truth_seconds": round(truth_seconds, 2)}
        curves[run.name], qualities[run.name] = points, rows
        (run.folder / "summary.json").write_text(json.dumps(summaries[run.name], indent=2) + "\n")
        left = len(runs) - len(summaries)
        per_run = (time.perf_counter() - started) / len(summaries)
        progress(f"{run.name}: {summary['fetched']} URLs fetched in {summary['seconds']:.1f} s "
                 f"({len(summaries)}/{len(runs)} runs; about {per_run * left:.0f} s left)")

    if jobs == 1:
        for r in runs:
            finished(r, *_run_outputs(*args[r.name], progress=progress))
    else:
        # forkserver: the workers inherit neither this process's threads nor its locks
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("forkserver"),
                                 initializer=_share_cores, initargs=(jobs,)) as pool:
            futures = {pool.submit(_run_outputs, *args[r.name]): r for r in runs}
            for future in as_completed(futures):
                finished(futures[future], *future.result())
    if len(runs) > 1:
        names = [r.name for r in runs]
        plot({n: curves[n] for n in names}, out / "curves.png", f"{cycles} cycles, {len(runs)} runs")
        repository.plot({label(n): qualities[n] for n in names}, out / "quality.png",
                        f"{cycles} cycles, {len(runs)} runs", web.first_switch())
    return {r.name: summaries[r.name] for r in runs}


def _check_starts(snapshots: list[Path], starts: list[int], cycles: int) -> None:
    """A series: one start per file, the first at cycle 1, increasing, none after the last cycle."""
    if len(starts) != len(snapshots):
        raise ValueError(f"--snapshot: {len(snapshots)} files but {len(starts)} start cycles")
    if starts[0] != 1:
        raise ValueError(f"--snapshot: the first version starts at cycle 1, not {starts[0]} ({snapshots[0]})")
    for (a, b), path in zip(zip(starts, starts[1:], strict=False), snapshots[1:], strict=True):
        if b <= a:
            raise ValueError(f"--snapshot: {path}@{b} must start after the version before it (cycle {a})")
    if starts[-1] > cycles:
        raise ValueError(f"--snapshot: {snapshots[-1]} starts at cycle {starts[-1]}, after the last of the "
                         f"{cycles} cycles (--cycles)")
