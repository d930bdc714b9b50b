"""What each stage's memory grows with, on a web of real documentation that changes.

    .venv/bin/python bench/memory.py [--spec FILE] [--limit 256MB] [--cycles 16] [--batch N] [--refresh-policy P]

Two crawls of a series of ``bench/series.py`` (by default ``bench/snapshots/py-libs-over-time.json``: eight Python
libraries' documentation in four Debian releases; build it first with ``bench/series.py --spec FILE build``), with
the same batch, refresh policy (``impact``, the default) and releases (at cycles 1, 5, 9, 13 of 16, as
``series.py refresh --regime covered``): ``half``, the hosts holding the first half of the first release's HTML
pages, and ``all``. Both run every stage under ``duckdb_memory_limit`` ``--limit`` and each task in a process of its
own, as under Airflow (fault_run's straight run, the web served on loopback at each cycle's date), so that a stage's
figure is its own: the MiB its process's resident set rose above where it stood when the stage started
(``cycles.stage_memory_mib``).

It prints, per stage, the most it took in a cycle of each crawl, and the size each crawl reached (stored pages,
frontier URLs, links, result rows, and the text of the copies the largest release replaced in one cycle). The last
lines are each ratio all / half: about 1 for a stage whose memory grows with the batch and the changed pages,
toward ``pages_all_over_half`` for one that grows with the crawl. The report goes to
``bench/results/<series>/memory.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import duckdb
import series
from policies import ROOT, USER_AGENT
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlcycle.devtools import fault_run
from crawlcycle.devtools.demo import CrawlDate
from crawlcycle.devtools.warc_server import Series, loopback_routes, serve
from crawlcycle.evaluation import policy_lab
from crawlcycle.pipeline.stage_order import STAGE_ORDER
from crawlcycle.ranking.query_log import write_partitions
from crawlcycle.settings.sources import load_settings, with_overrides

START = date(2026, 11, 1)
SIZES = {  # what a crawl has grown to, by its end
    "pages": "SELECT count(*) FROM pages",
    "frontier": "SELECT count(*) FROM frontier",
    "links": "SELECT count(*) FROM links",
    "result_rows": "SELECT count(*) FROM query_results WHERE cycle = (SELECT max(cycle) FROM query_results)",
    "replaced_text_mb": "SELECT round(coalesce(max(mb), 0), 1) FROM (SELECT sum(length(text)) / 1e6 AS mb "
                        "FROM replaced_pages GROUP BY replaced_cycle)",
}


def cut(warc: Path, hosts: set[str], path: Path) -> Path:
    """The records of ``warc`` whose URL is on one of ``hosts``, written to ``path``."""
    with warc.open("rb") as f, path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for rec in ArchiveIterator(f):
            uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
            if rec.rec_type == "response" and uri.split("/")[2:3] and uri.split("/")[2] in hosts:
                writer.write_record(rec)
    return path


def half_hosts(warc: Path) -> set[str]:
    """The first hosts (in order of their names) that together hold half of ``warc``'s HTML pages."""
    pages = policy_lab.html_pages(warc)
    total, kept, out = sum(map(len, pages.values())), 0, set()
    for host, urls in pages.items():
        if kept >= total / 2:
            break
        out.add(host)
        kept += len(urls)
    return out


def crawl(name: str, warcs: list[Path], queries: Path, work: Path, limit: str, batch: int, cycles: int,
          refresh_policy: str) -> dict:
    """``cycles`` cycles over ``warcs`` (a release per file, at the covered regime's cycles), each task in its own
    process; each stage's most MiB in a cycle, the crawl's sizes, and its seconds."""
    folder = work / name
    starts = [1 + round(i * cycles / len(warcs)) for i in range(len(warcs))]
    web = Series([([w], (START + timedelta(days=s - 1)).toordinal()) for w, s in zip(warcs, starts, strict=True)],
                 switch="at-start")
    days = [START + timedelta(days=k) for k in range(cycles)]
    seeds = folder.with_name(f"{name}-seeds.txt")
    seeds.write_text("".join(u + "\n" for u in policy_lab.seed_set(policy_lab.html_pages(warcs[0]), 0, "/index.html")))
    settings = load_settings(environ={}, overrides={
        "user_agent": USER_AGENT, "batch_size": batch, "policy": "hybrid", "refresh_policy": refresh_policy,
        "duckdb_memory_limit": limit, "db_path": str(folder / "crawl.duckdb"), "data_dir": str(folder / "data"),
        "seeds_file": str(seeds), "query_log_dir": str(work / f"{name}-query-log"),
        "start_date": START.isoformat(), "end_date": days[-1].isoformat(), "allow_networks": "127.0.0.0/8",
        "min_delay": 0, "delay_factor": 0, "obey_crawl_delay": False, "gate_warn": "error_share"})
    write_partitions(queries, Path(settings.query_log_dir), days)
    t0 = time.perf_counter()
    with serve(web, clock=CrawlDate(settings)) as server:
        routes = loopback_routes(web.hosts(), server.port)
        run = fault_run.Crawl(folder, with_overrides(settings, {"connect_to": routes}))
        workers = fault_run.Workers(work)
        try:
            fault_run.crawl_days(run, days, workers, None, False,
                                 lambda m: print(f"  [{name} {time.perf_counter() - t0:5.0f} s] {m}", flush=True))
        finally:
            workers.close()
    seconds = time.perf_counter() - t0
    with duckdb.connect(str(folder / "crawl.duckdb"), read_only=True) as con:
        per_cycle = [json.loads(m or "{}") for m, in con.execute(
            "SELECT stage_memory_mib FROM cycles ORDER BY cycle").fetchall()]
        sizes = {k: con.execute(q).fetchall()[0][0] for k, q in SIZES.items()}
    stages = {s: max(c.get(s, 0.0) for c in per_cycle) for s in sorted({s for c in per_cycle for s in c},
                                                                          key=_stage_order)}
    return {"stages": stages, "sizes": sizes, "seconds": round(seconds), "per_cycle": per_cycle}


def _stage_order(stage: str) -> float:
    """Where ``stage`` runs in a cycle: a task's place, a gate's (``gate_<stage>``) just after its own task."""
    for k, t in enumerate(STAGE_ORDER):
        if stage == t.name:
            return k
        if stage.removeprefix("gate_") in t.gates:
            return k + t.gates.index(stage.removeprefix("gate_")) / len(t.gates)
    return len(STAGE_ORDER)


def report(runs: dict[str, dict], limit: str, batch: int, cycles: int, refresh_policy: str) -> str:
    half, full = runs["half"], runs["all"]
    lines = [f"# What each stage's memory grows with: {series.title()}", "",
             f"Measured with `.venv/bin/python bench/memory.py{series.flag()} --limit {limit} --cycles {cycles} "
             f"--batch {batch}` (refresh policy {refresh_policy}, ordering hybrid, each task in a process of its own): "
             "two crawls of the series with the same batch and releases, `half` on the hosts holding half the first "
             "release's HTML pages and `all` on every host. MiB: the most a stage's process rose above where it "
             "stood when the stage started, in any cycle.", "",
             "| stage | half | all | all / half |", "|---|---|---|---|"]
    for stage in full["stages"]:
        a, b = half["stages"].get(stage, 0.0), full["stages"][stage]
        lines.append(f"| {stage} | {a:.0f} MiB | {b:.0f} MiB | {b / a if a else float('nan'):.2f} |")
    lines += ["", "| crawl size at the end | half | all | all / half |", "|---|---|---|---|"]
    for key in SIZES:
        a, b = half["sizes"][key], full["sizes"][key]
        lines.append(f"| {key} | {a:,} | {b:,} | {b / a if a else float('nan'):.2f} |")
    lines += ["", f"Seconds: half {half['seconds']}, all {full['seconds']}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, default=ROOT / "bench" / "snapshots" / "py-libs-over-time.json")
    ap.add_argument("--limit", default="256MB", help="duckdb_memory_limit of both crawls (default %(default)s)")
    ap.add_argument("--cycles", type=int, default=16)
    ap.add_argument("--batch", type=int, help="batch size (default: 10 %% of the first release's HTML pages)")
    ap.add_argument("--refresh-policy", default="impact")
    ap.add_argument("--work", type=Path, default=ROOT / "data" / "bench-memory")
    args = ap.parse_args()
    series.use_spec(args.spec)
    warcs = series.built(series.load_spec(series.SPEC))
    batch = args.batch or round(0.10 * sum(map(len, policy_lab.html_pages(warcs[0]).values())))
    work = args.work / series.NAME
    work.mkdir(parents=True, exist_ok=True)
    series.workload(series.load_spec(series.SPEC), work, 0, 3000)
    hosts = half_hosts(warcs[0])
    print(f"half: {', '.join(sorted(hosts))}", flush=True)
    halves = [cut(w, hosts, work / f"half-{w.name}") for w in warcs]
    t0 = time.perf_counter()
    runs = {name: crawl(name, ws, work / "queries.tsv", work, args.limit, batch, args.cycles, args.refresh_policy)
            for name, ws in (("half", halves), ("all", warcs))}
    text = report(runs, args.limit, batch, args.cycles, args.refresh_policy)
    series.RESULTS.mkdir(parents=True, exist_ok=True)
    (series.RESULTS / "memory.md").write_text(text)
    (series.RESULTS / "memory.json").write_text(json.dumps(runs, indent=1))
    print(text)
    for stage, mib in runs["all"]["stages"].items():
        print(f"{stage}_memory_all_over_half={mib / max(runs['half']['stages'].get(stage, 0.0), 0.1):.2f}")
    print(f"pages_all_over_half={runs['all']['sizes']['pages'] / max(runs['half']['sizes']['pages'], 1):.2f}")
    print(f"memory_bench_seconds={time.perf_counter() - t0:.0f}")


if __name__ == "__main__":
    sys.exit(main())
