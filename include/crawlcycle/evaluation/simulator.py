"""Offline evaluation of ordering policies on a frozen web snapshot (WARC files).

Each policy runs the real cycle stages (``stages.init``, ``stages.run_cycle``) against the snapshot served on
loopback by :mod:`crawlcycle.devtools.warc_server` (a URL not in the snapshot answers 404), in its own database and data
folder under ``<out>/<policy>/work/``. Every cycle reads the same workload: the query file is copied into one
query-log partition per cycle (``dt=start_date + k``).

The ground truth (``crawlcycle.evaluation.ground_truth``: every page's true impact by the reference ranker and by an
independent judge) is computed once per snapshot, workload, settings and code, and kept in the cache folder
(``--cache``, default ``<data_dir>/simulation-cache``) with the parse cache that its parse fills: every policy's
cycles read the snapshot's parse results from there instead of parsing the same bytes again. Policies run side by
side in ``jobs`` processes over one snapshot server; each writes only its own folder, so outputs do not depend on
``jobs``.

A snapshot has no server to spare, so the simulated crawl waits for no delay (``min_delay``, ``delay_factor`` 0,
``obey_crawl_delay`` off; robots.txt rules still apply), and the fetch gate's error share only warns: links out of
the snapshot all fail. The crawl never leaves loopback: ``connect_to`` sends every host the snapshot names
(record, link and redirect hosts, seeds), and every other host under the same top-level domains, to the snapshot
server.

Outputs per policy (in ``<out>``, or ``<out>/<policy>/`` when several run):

- ``order.csv``: ``url,cycle,rank``, every URL the fetcher tried (not deferred, not robots-disallowed), once, in
  fetch order. A URL outside the snapshot is a fetch that found nothing: a 404, or for ``https`` a failed TLS
  handshake with the plain-HTTP snapshot server.
- ``curve.csv``: one row per fetch: ``fetched`` (fetches so far), ``fraction`` (of the snapshot's pages),
  ``policy`` and ``ideal`` (cumulative true impact share; the ideal fetches pages by descending true impact),
  the same by the independent judge (``policy_bm25s``, ``ideal_bm25s``),
  ``p_cs`` (Cho's crawl-and-stop: share of the fetched pages that are among the top ``fetched`` pages by
  in-degree) and ``p_st`` (share of the hot pages fetched; hot = top ``HOT_SHARE`` of pages by in-degree in
  the full snapshot link graph). A fetch credits the page it ended on (the redirect target), once.
- ``summary.json``: per budget in ``BUDGETS`` (share of the snapshot's pages) ``pct_of_ideal``, ``p_cs`` and
  ``p_st``, null when the run fetched fewer URLs than the budget (``budgets``: the reference judge;
  ``budgets_by_judge``: each judge); plus counts, the policy's seconds and the ground truth's; and ``engagement``,
  whether the query-driven part of the policy engaged: ``cycles``, each cycle's figures of ``v_cycle_summary``
  (``ENGAGEMENT``: needy queries, those with frontier candidates, frontier pages in sketches, the next batch's share
  of URLs with query impact and of priority mass from queries; null where the policy has no such part), and
  ``mean_from_cycle_3``, each figure's mean over the cycles from ``ENGAGEMENT_FROM`` on that have it (null: none),
  once the first cycles' fits have data to learn from; and ``waste``, what each cycle's batch slots gave (``WASTE``)
  with the shares of slots without a page and of slots to origins that did not answer from cycle 3 on (``waste``).
- ``curve.png``: both impact curves. Several policies also give ``<out>/curves.png``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import polars as pl

from crawlcycle.db import connect, query
from crawlcycle.devtools.warc_server import check_warc, host_key, loopback_routes, serve
from crawlcycle.evaluation.ground_truth import JUDGES, Truth, ground_truth
from crawlcycle.pipeline import stages
from crawlcycle.ranking.query_log import write_partitions
from crawlcycle.settings import Settings, with_overrides
from crawlcycle.ui.report import ENGAGEMENT, WASTE

BUDGETS = (0.01, 0.05, 0.10)
ENGAGEMENT_FROM = 3  # the first cycles steer by priors: their models have little or nothing to learn from


def fetch_order(settings: Settings) -> pl.DataFrame:
    """Every URL the fetcher tried, once, in fetch order: url, cycle, rank and the 2xx page it ended on (null for a
    404 or a failure). Deferred and robots-disallowed URLs were not tried."""
    with connect(settings, read_only=True) as con:
        return query(con, "evaluation/simulator/fetch_order")


def cycle_rows(settings: Settings, names: list[str]) -> list[dict]:
    """Columns ``names`` of every cycle of ``v_cycle_summary``, JSON columns as objects."""
    with connect(settings, read_only=True) as con:
        rows = con.sql(f"SELECT cycle, {', '.join(names)} FROM v_cycle_summary ORDER BY cycle").pl().to_dicts()
    return [{k: json.loads(v) if k in ("slots_failed", "slots_skipped") and v else v for k, v in r.items()}
            for r in rows]


def waste(settings: Settings) -> dict:
    """What each cycle's batch slots gave (``WASTE``), and from cycle ``ENGAGEMENT_FROM`` on: the share of slots that
    gave no page (``waste_share``, broken links included), the share that went to origins that did not answer, and
    the origins probed; with ``urls_gone_unanswered``, frontier URLs given up without ever getting an answer of their
    own (what a back-off that loses URLs would leave)."""
    rows = cycle_rows(settings, ["batch_size", *WASTE])
    late = [r for r in rows if r["cycle"] >= ENGAGEMENT_FROM and r["batch_size"]]
    slots = sum(r["batch_size"] for r in late)
    with connect(settings, read_only=True) as con:
        gone = con.sql("SELECT count(*) FROM frontier f WHERE status = 'gone' AND NOT EXISTS "
                       "(SELECT 1 FROM fetch_log l WHERE l.url = f.url AND l.status IS NOT NULL)").fetchall()[0][0]
    return {"cycles": rows, f"from_cycle_{ENGAGEMENT_FROM}": {
        "slots": slots,
        "waste_share": round(1 - sum(r["slots_fetched"] for r in late) / slots, 9) if slots else None,
        "unanswered_share": round(sum(r["slots_unanswered"] for r in late) / slots, 9) if slots else None,
        "probes": sum(r["probes"] for r in late)}, "urls_gone_unanswered": gone}


def waste_line(summary: dict) -> str:
    """A summary's batch slots from cycle ``ENGAGEMENT_FROM`` on, in one line."""
    w = summary["waste"]
    late = w[f"from_cycle_{ENGAGEMENT_FROM}"]
    if not late["slots"]:
        return f"no batch slots from cycle {ENGAGEMENT_FROM} on"
    return (f"{late['slots']} slots from cycle {ENGAGEMENT_FROM} on: waste {100 * late['waste_share']:.1f} %, to "
            f"origins that did not answer {100 * late['unanswered_share']:.1f} %, {late['probes']} origins probed; "
            f"{w['urls_gone_unanswered']} URLs given up without an answer")


def engagement(settings: Settings) -> dict:
    """Each cycle's engagement figures (``ENGAGEMENT``, from ``v_cycle_summary``) and their means from cycle
    ``ENGAGEMENT_FROM`` on, over the cycles that have each (null: none has)."""
    rows = cycle_rows(settings, ENGAGEMENT)
    late = [r for r in rows if r["cycle"] >= ENGAGEMENT_FROM]
    means = {}
    for name in ENGAGEMENT:
        values = [r[name] for r in late if r[name] is not None]
        means[name] = round(sum(values) / len(values), 9) if values else None
    return {"cycles": rows, f"mean_from_cycle_{ENGAGEMENT_FROM}": means}


def engagement_text(summary: dict) -> str:
    """A summary's engagement means (from cycle ``ENGAGEMENT_FROM`` on) in one line; "n/a" where there are none."""
    means = summary.get("engagement", {}).get(f"mean_from_cycle_{ENGAGEMENT_FROM}", {})

    def count(key: str) -> str:
        return "n/a" if means.get(key) is None else f"{means[key]:.0f}"

    def share(key: str) -> str:
        return "n/a" if means.get(key) is None else f"{100 * means[key]:.1f}%"

    return (f"needy {count('needy_queries')}, with candidates {count('needy_with_candidates')}, sketch pages "
            f"{count('sketch_frontier_pages')}, batch query share {share('batch_query_share')}, mass "
            f"{share('batch_query_mass')} (means of cycles>={ENGAGEMENT_FROM})")


def curve(order: pl.DataFrame, truth: Truth) -> pl.DataFrame:
    """Cumulative impact share of the fetch order and of the ideal order (``policy``/``ideal`` by the reference
    judge, ``policy_<judge>``/``ideal_<judge>`` by the others), with Cho's hot-page shares."""
    n_pages = truth.pages.height
    pages = truth.pages.with_columns(by_degree=pl.col("in_links").rank("ordinal", descending=True))
    first = order.with_columns(pl.when(pl.col("page").is_first_distinct()).then(pl.col("page")).alias("page"))
    got = first.join(pages, left_on="page", right_on="url", how="left", maintain_order="left")
    k = pl.int_range(1, order.height + 1, eager=True)
    columns = {"fetched": k, "fraction": k / n_pages}
    for judge in JUDGES:
        column, suffix = Truth.column(judge), "" if judge == "reference" else f"_{judge}"
        total = truth.total(judge) or 1.0
        ideal = truth.pages[column].sort(descending=True).cum_sum()
        ideal = pl.concat([ideal, pl.repeat(ideal[-1] if ideal.len() else 0.0, max(0, order.height - ideal.len()),
                                            eager=True)])[:order.height]
        columns[f"policy{suffix}"] = got[column].fill_null(0).cum_sum() / total
        columns[f"ideal{suffix}"] = ideal / total
    columns["p_cs"] = _crawl_and_stop(got["by_degree"].fill_null(n_pages + 1).to_numpy())
    columns["p_st"] = got["hot"].fill_null(False).cast(pl.Int64).cum_sum() / max(1, int(truth.pages["hot"].sum()))
    return pl.DataFrame(columns, schema={name: pl.Int64 if name == "fetched" else pl.Float64 for name in columns})


def _crawl_and_stop(by_degree: np.ndarray) -> np.ndarray:
    """Cho's P_CS after each fetch k: share of the first k fetches among the k pages of highest in-degree.
    The i-th fetch (1-based), of in-degree rank d, counts from k = max(i, d) on."""
    n = len(by_degree)
    counts = np.bincount(np.maximum(np.arange(1, n + 1), by_degree), minlength=n + 2)[1:n + 1]
    return np.cumsum(counts) / np.arange(1, n + 1)


def summarize(points: pl.DataFrame, truth: Truth, judge: str = "reference") -> dict:
    """% of ideal (by ``judge``) and hot-page shares at each budget; null where the run fetched less than it."""
    suffix = "" if judge == "reference" else f"_{judge}"
    out = {}
    for budget in BUDGETS:
        k = max(1, round(budget * truth.pages.height))
        if k > points.height:
            out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": None, "p_cs": None, "p_st": None}
            continue
        row = points.row(k - 1, named=True)
        ideal = row[f"ideal{suffix}"]
        out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": row[f"policy{suffix}"] / ideal if ideal else None,
                                "p_cs": row["p_cs"], "p_st": row["p_st"]}
    return out


def plot(curves: dict[str, pl.DataFrame], path: Path, title: str) -> None:
    """Impact share against the fraction of pages fetched, for each policy and the ideal order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    longest = max(curves.values(), key=lambda c: c.height)
    ax.plot(longest["fraction"], longest["ideal"], color="black", linestyle="--", label="ideal")
    palette = plt.get_cmap("tab20").colors  # ten dark colours at even places, their light shades at odd ones
    for i, (name, points) in enumerate(curves.items()):
        ax.plot(points["fraction"], points["policy"], label=name, color=palette[(2 * i) % 20 + (i // 10) % 2],
                linewidth=2.4 if name == "hybrid" else 1.3, linestyle="-" if i < 10 else ":")
    ax.set_xlabel("fraction of the snapshot's pages fetched")
    ax.set_ylabel("cumulative true impact share")
    ax.set_title(title)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(ncol=2, fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run_policy(base: Settings, policy: str, routes: str, query_file: Path, seeds: Path,
               cycles: int, work: Path, progress: Callable[[str], None]) -> Settings:
    """``cycles`` real crawl cycles of ``policy`` over the served snapshot, in a fresh database under ``work``."""
    shutil.rmtree(work, ignore_errors=True)
    start = date.fromisoformat(base.start_date)
    days = [start + timedelta(days=k) for k in range(cycles)]
    settings = with_overrides(base, {
        "policy": policy, "db_path": str(work / "crawl.duckdb"), "data_dir": str(work / "data"),
        "seeds_file": str(seeds), "query_log_dir": str(work / "query_log"), "end_date": days[-1].isoformat(),
        "connect_to": routes, "allow_networks": "127.0.0.0/8",
        "min_delay": 0, "delay_factor": 0, "obey_crawl_delay": False,
        # links out of a snapshot all fail (404, or TLS for https): a high error share is expected there
        "gate_warn": ",".join(filter(None, [base.gate_warn, "error_share"]))})
    write_partitions(query_file, work / "query_log", days)
    stages.init(settings)
    t0 = time.perf_counter()
    for k, day in enumerate(days, 1):
        summary = stages.run_cycle(settings, day, progress=lambda m: None)
        spent = time.perf_counter() - t0
        wasted = "" if summary["waste_share"] is None else f" (waste {100 * summary['waste_share']:.0f} %)"
        progress(f"{policy}: cycle {k}/{cycles} done, {summary['fetched']} fetched{wasted}, {spent:.0f} s; "
                 f"about {spent / k * (cycles - k):.0f} s left for {policy}")
    return settings


def _say(message: str) -> None:
    print(message, flush=True)  # a worker's output is a pipe: unflushed lines would come when it ends


def _policy_outputs(base: Settings, policy: str, routes: str, query_file: Path, seeds: Path, cycles: int,
                    folder: Path, truth: Truth, progress: Callable[[str], None] = _say) -> tuple[dict, pl.DataFrame]:
    """Run one policy and write its order and curve into ``folder``; (summary, curve). Top-level, for a process
    pool."""
    t0 = time.perf_counter()
    settings = run_policy(base, policy, routes, query_file, seeds, cycles, folder / "work", progress)
    seconds = time.perf_counter() - t0
    order = fetch_order(settings)
    order.select("url", "cycle", "rank").write_csv(folder / "order.csv")
    points = curve(order, truth)
    points.write_csv(folder / "curve.csv")
    plot({policy: points}, folder / "curve.png", f"{policy}: {cycles} cycles of {settings.batch_size}")
    by_judge = {judge: summarize(points, truth, judge) for judge in JUDGES}
    summary = {"policy": policy, "cycles": cycles, "batch_size": settings.batch_size,
               "snapshot_pages": truth.pages.height, "fetched": order.height,
               "hot_pages": int(truth.pages["hot"].sum()), "total_impact": truth.total(),
               "budgets": by_judge["reference"], "budgets_by_judge": by_judge, "engagement": engagement(settings),
               "waste": waste(settings),
               "seconds": round(seconds, 2)}
    return summary, points


def _share_cores(jobs: int) -> None:
    """Give each of ``jobs`` worker processes its share of the cores: OpenMP (the S' trees) spinning on more threads
    than there are free cores slows a fit down several times."""
    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = threads


def simulate(base: Settings, snapshots: list[Path], query_file: Path, seeds: Path, policies: list[str],
             cycles: int, out: Path, progress: Callable[[str], None] = print, jobs: int = 1,
             cache: Path | None = None) -> dict[str, dict]:
    """Run each policy over the snapshot, ``jobs`` at a time, and write its outputs; return each policy's summary
    (with ``truth_seconds``, the time the ground truth took in this call: about 0 when it came from ``cache``)."""
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
    out = out.resolve()  # settings paths must be absolute (the quality gates' context needs it)
    out.mkdir(parents=True, exist_ok=True)
    cache = (cache or Path(base.data_dir) / "simulation-cache").resolve()
    base = with_overrides(base, {"parse_cache": str(cache / "parse.sqlite")})
    t0 = time.perf_counter()
    truth, cached = ground_truth(base, snapshots, query_file, cache)
    truth_seconds = time.perf_counter() - t0
    if jobs > 1:
        base = with_overrides(base, {"duckdb_threads": max(1, base.duckdb_threads // jobs)})
    if not truth.pages.height:
        raise ValueError(f"--snapshot: no 2xx HTML page in {', '.join(map(str, snapshots))}")
    progress(f"ground truth: {truth.pages.height} pages, total impact {truth.total():g}, "
             f"{int((truth.pages['impact'] > 0).sum())} pages with impact "
             f"({'kept from ' if cached else 'computed in '}{truth.folder}, {truth_seconds:.1f} s)")
    (out / "truth.json").write_text(json.dumps({"folder": str(truth.folder), "cached": cached,
                                                "seconds": round(truth_seconds, 2)}, indent=1) + "\n")
    summaries: dict[str, dict] = {}
    curves: dict[str, pl.DataFrame] = {}
    folders = {p: out / p if len(policies) > 1 else out for p in policies}
    with serve(snapshots) as server:
        seed_hosts = {host_key(urlsplit(line.strip()).netloc) for line in seeds.read_text().splitlines()}
        routes = loopback_routes(truth.hosts | seed_hosts | server.server.web.hosts(), server.port)
        args = {p: (base, p, routes, query_file, seeds, cycles, folders[p], truth) for p in policies}
        started = time.perf_counter()

        def finished(policy: str, summary: dict, points: pl.DataFrame) -> None:
            summaries[policy], curves[policy] = {**summary, "truth_seconds": round(truth_seconds, 2)}, points
            (folders[policy] / "summary.json").write_text(json.dumps(summaries[policy], indent=2) + "\n")
            left = len(policies) - len(summaries)
            per_policy = (time.perf_counter() - started) / len(summaries)
            progress(f"{policy}: {summary['fetched']} URLs fetched in {summary['seconds']:.1f} s "
                     f"({len(summaries)}/{len(policies)} policies; about {per_policy * left:.0f} s left)")

        if jobs == 1:
            for p in policies:
                finished(p, *_policy_outputs(*args[p], progress=progress))
        else:
            # forkserver: the workers inherit neither this process's server thread nor its locks
            with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("forkserver"),
                                     initializer=_share_cores, initargs=(jobs,)) as pool:
                futures = {pool.submit(_policy_outputs, *args[p]): p for p in policies}
                for future in as_completed(futures):
                    finished(futures[future], *future.result())
    if len(policies) > 1:
        plot({p: curves[p] for p in policies}, out / "curves.png", f"{cycles} cycles, {len(policies)} policies")
    return {p: summaries[p] for p in policies}
