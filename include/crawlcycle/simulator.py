"""Offline evaluation of ordering policies on a frozen web snapshot (WARC files).

Each policy runs the real cycle stages (``cycle.init``, ``cycle.run_cycle``) against the snapshot served on
loopback by :mod:`crawlcycle.webserver` (a URL not in the snapshot answers 404), in its own database and data
folder under ``<out>/<policy>/work/``. Every cycle reads the same workload: the query file is copied into one
query-log partition per cycle (``dt=start_date + k``).

Ground truth is built once, in ``<out>/truth/``: the parse stage over every snapshot record, merged into a
fresh crawl database through the product's own merge SQL, linked (in-degree, PageRank), indexed and ranked by
the reference ranker. A page's true impact is the sum of f(q) over the queries whose true top K holds it.
Snapshot pages are the 2xx records the parser reads as HTML-or-unknown (``reason`` not ``not_html``).

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
  ``p_cs`` (Cho's crawl-and-stop: share of the fetched pages that are among the top ``fetched`` pages by
  in-degree) and ``p_st`` (share of the hot pages fetched; hot = top ``HOT_SHARE`` of pages by in-degree in
  the full snapshot link graph). A fetch credits the page it ended on (the redirect target), once.
- ``summary.json``: per budget in ``BUDGETS`` (share of the snapshot's pages) ``pct_of_ideal``, ``p_cs`` and
  ``p_st``, null when the run fetched fewer URLs than the budget; plus counts and the policy's seconds.
- ``curve.png``: both impact curves. Several policies also give ``<out>/curves.png``.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import numpy as np
import polars as pl
from warcio.archiveiterator import ArchiveIterator

from crawlcycle import cycle, ranker, refit, shard_files, update
from crawlcycle.canonical import host_of
from crawlcycle.db import connect, migrate, run_sql
from crawlcycle.demo import check_warc
from crawlcycle.parse import parse_warcs
from crawlcycle.query_log import partition_dir, read_partition
from crawlcycle.settings import Settings, with_overrides
from crawlcycle.webserver import host_key, serve

BUDGETS = (0.01, 0.05, 0.10)
HOT_SHARE = 0.10


@dataclass(frozen=True)
class Truth:
    """Every snapshot page with its true impact and in-degree."""

    pages: pl.DataFrame  # url, impact, in_links, hot
    total_impact: float
    hosts: set[str]  # every host a crawl of the snapshot can meet: record, link and redirect hosts


def _stage_queries(query_file: Path, folder: Path, days: list[date]) -> None:
    """Copy the workload into one partition per day, so each cycle reads the same queries."""
    shutil.rmtree(folder, ignore_errors=True)
    for day in days:
        part = partition_dir(folder, day)
        part.mkdir(parents=True)
        shutil.copyfile(query_file, part / f"queries{query_file.suffix}")


def ground_truth(settings: Settings, snapshots: list[Path], query_file: Path, folder: Path) -> Truth:
    """Parse, link, index and rank the whole snapshot in a fresh database under ``folder``."""
    shutil.rmtree(folder, ignore_errors=True)
    day = date.fromisoformat(settings.start_date)
    settings = with_overrides(settings, {"db_path": str(folder / "truth.duckdb"), "data_dir": str(folder),
                                         "query_log_dir": str(folder / "query_log")})
    _stage_queries(query_file, folder / "query_log", [day])
    workload = read_partition(settings, day).rows.group_by("query").agg(frequency=pl.col("frequency").sum())
    parsed = parse_warcs(snapshots, folder / "parse", settings)
    pages = (pl.read_parquet(parsed.pages_path).filter(pl.col("status").is_between(200, 299))
             .select(update.PAGE_COLUMNS)
             .with_columns(host=pl.col("url").map_elements(host_of, return_dtype=pl.String)))
    links = pl.read_parquet(parsed.links_path).unique(["src", "dst", "anchor"], keep="first", maintain_order=True)
    no_fetches = pl.DataFrame(schema={"url": pl.String, "final_url": pl.String, "outcome": pl.String})
    with connect(settings) as con:
        migrate(con)
        con.register("s_pages", pages)
        con.register("s_links", links)
        no_sitemaps = pl.from_arrow(shard_files.FETCH_OUTPUTS[shard_files.SITEMAP_URLS].empty_table())
        con.register("s_new", update.discovered_urls(no_fetches, links, no_sitemaps))
        con.register("s_rejects", pl.read_parquet(parsed.rejects_path).select("src", "raw", "reason"))
        run_sql(con, "stages/merge_parse", cycle=1, max_urls_per_host=settings.max_urls_per_host)
        refit.refit_link_graph(con, 1)
        ranker.index_pages(con, 1)
        ranker.rank_queries(con, settings, 1, workload["query"].to_list())
        con.register("s_workload", workload)
        truth = con.sql("""
            WITH impact AS (
                SELECT r.url, sum(w.frequency) AS impact
                FROM query_results r JOIN s_workload w ON w.query = r.query
                WHERE r.cycle = 1 GROUP BY r.url)
            SELECT p.url, coalesce(i.impact, 0)::DOUBLE AS impact, f.in_links
            FROM pages p JOIN frontier f USING (url) LEFT JOIN impact i USING (url)
            WHERE p.reason IS DISTINCT FROM 'not_html'
            ORDER BY p.url""").pl()
        hosts = set(con.sql("SELECT DISTINCT host FROM frontier").pl()["host"])
    hot = max(1, math.ceil(HOT_SHARE * truth.height))
    truth = truth.with_columns(hot=pl.col("in_links").rank("ordinal", descending=True) <= hot)
    return Truth(truth, float(truth["impact"].sum()), hosts | _redirect_hosts(snapshots))


def _redirect_hosts(snapshots: list[Path]) -> set[str]:
    """Hosts named by the Location header of the snapshot's responses."""
    hosts = set()
    for path in snapshots:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                target = rec.http_headers.get_header("Location") if rec.rec_type == "response" else None
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                if target:
                    hosts.add(host_key(urlsplit(urljoin(uri.strip("<>"), target)).netloc))
    return hosts


def loopback_routes(hosts: set[str], port: int) -> str:
    """A connect_to value sending every host of ``hosts``, and every other host under their top-level domains,
    to the snapshot server: a frontier URL outside the snapshot gets its 404 there, never from the internet."""
    suffixes = {f"*.{h.rsplit('.', 1)[1]}" if "." in h else h for h in hosts if h}
    return ",".join(f"{s}=127.0.0.1:{port}" for s in sorted(suffixes))


def fetch_order(settings: Settings) -> pl.DataFrame:
    """Every URL the fetcher tried, once, in fetch order: url, cycle, rank and the 2xx page it ended on (null for a
    404 or a failure). Deferred and robots-disallowed URLs were not tried."""
    with connect(settings, read_only=True) as con:
        return con.sql("""
            SELECT l.url, l.cycle, b.rank,
                   CASE WHEN l.status BETWEEN 200 AND 299 THEN coalesce(l.final_url, l.url) END AS page
            FROM fetch_log l JOIN batches b USING (cycle, url)
            WHERE l.outcome NOT IN ('deferred', 'disallowed')
            QUALIFY row_number() OVER (PARTITION BY l.url ORDER BY l.cycle, b.rank) = 1
            ORDER BY l.cycle, b.rank""").pl()


def curve(order: pl.DataFrame, truth: Truth) -> pl.DataFrame:
    """Cumulative impact share of the fetch order and of the ideal order, with Cho's hot-page shares."""
    n_pages = truth.pages.height
    pages = truth.pages.with_columns(by_degree=pl.col("in_links").rank("ordinal", descending=True))
    first = order.with_columns(pl.when(pl.col("page").is_first_distinct()).then(pl.col("page")).alias("page"))
    got = first.join(pages, left_on="page", right_on="url", how="left", maintain_order="left")
    k = pl.int_range(1, order.height + 1, eager=True)
    total = truth.total_impact or 1.0
    ideal = truth.pages["impact"].sort(descending=True).cum_sum()
    ideal = pl.concat([ideal, pl.repeat(ideal[-1] if ideal.len() else 0.0, max(0, order.height - ideal.len()),
                                        eager=True)])[:order.height]
    return pl.DataFrame({
        "fetched": k,
        "fraction": k / n_pages,
        "policy": got["impact"].fill_null(0).cum_sum() / total,
        "ideal": ideal / total,
        "p_cs": _crawl_and_stop(got["by_degree"].fill_null(n_pages + 1).to_numpy()),
        "p_st": got["hot"].fill_null(False).cast(pl.Int64).cum_sum() / max(1, int(truth.pages["hot"].sum())),
    }, schema={"fetched": pl.Int64, "fraction": pl.Float64, "policy": pl.Float64, "ideal": pl.Float64,
               "p_cs": pl.Float64, "p_st": pl.Float64})


def _crawl_and_stop(by_degree: np.ndarray) -> np.ndarray:
    """Cho's P_CS after each fetch k: share of the first k fetches among the k pages of highest in-degree.
    The i-th fetch (1-based), of in-degree rank d, counts from k = max(i, d) on."""
    n = len(by_degree)
    counts = np.bincount(np.maximum(np.arange(1, n + 1), by_degree), minlength=n + 2)[1:n + 1]
    return np.cumsum(counts) / np.arange(1, n + 1)


def summarize(points: pl.DataFrame, truth: Truth) -> dict:
    """% of ideal and hot-page shares at each budget; null where the run fetched less than the budget."""
    out = {}
    for budget in BUDGETS:
        k = max(1, round(budget * truth.pages.height))
        if k > points.height:
            out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": None, "p_cs": None, "p_st": None}
            continue
        row = points.row(k - 1, named=True)
        out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": row["policy"] / row["ideal"] if row["ideal"] else None,
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
    _stage_queries(query_file, work / "query_log", days)
    cycle.init(settings)
    for day in days:
        cycle.run_cycle(settings, day, progress=lambda m: progress(f"{policy}: {m}"))
    return settings


def simulate(base: Settings, snapshots: list[Path], query_file: Path, seeds: Path, policies: list[str],
             cycles: int, out: Path, progress: Callable[[str], None] = print) -> dict[str, dict]:
    """Run each policy over the snapshot and write its outputs; return each policy's summary."""
    for path in snapshots:
        check_warc(path, "--snapshot")
    for flag, path in (("--queries", query_file), ("--seeds", seeds)):
        if not path.is_file():
            raise FileNotFoundError(f"{flag}: {path} does not exist")
    if query_file.suffix not in (".tsv", ".parquet"):
        raise ValueError(f"--queries: {query_file} must be a .tsv or .parquet query-log file")
    if cycles < 1:
        raise ValueError(f"--cycles must be at least 1, got {cycles}")
    out = out.resolve()  # settings paths must be absolute (the quality gates' context needs it)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    truth = ground_truth(base, snapshots, query_file, out / "truth")
    if not truth.pages.height:
        raise ValueError(f"--snapshot: no 2xx HTML page in {', '.join(map(str, snapshots))}")
    progress(f"ground truth: {truth.pages.height} pages, total impact {truth.total_impact:g}, "
             f"{int((truth.pages['impact'] > 0).sum())} pages with impact ({time.perf_counter() - t0:.1f} s)")
    summaries: dict[str, dict] = {}
    curves: dict[str, pl.DataFrame] = {}
    with serve(snapshots) as server:
        seed_hosts = {host_key(urlsplit(line.strip()).netloc) for line in seeds.read_text().splitlines()}
        routes = loopback_routes(truth.hosts | seed_hosts | server.server.web.hosts(), server.port)
        for policy in policies:
            t0 = time.perf_counter()
            settings = run_policy(base, policy, routes, query_file, seeds, cycles,
                                  out / policy / "work", progress)
            seconds = time.perf_counter() - t0
            folder = out / policy if len(policies) > 1 else out
            order = fetch_order(settings)
            order.select("url", "cycle", "rank").write_csv(folder / "order.csv")
            points = curve(order, truth)
            points.write_csv(folder / "curve.csv")
            plot({policy: points}, folder / "curve.png", f"{policy}: {cycles} cycles of {settings.batch_size}")
            summaries[policy] = {"policy": policy, "cycles": cycles, "batch_size": settings.batch_size,
                                 "snapshot_pages": truth.pages.height, "fetched": order.height,
                                 "hot_pages": int(truth.pages["hot"].sum()), "total_impact": truth.total_impact,
                                 "budgets": summarize(points, truth), "seconds": round(seconds, 2)}
            (folder / "summary.json").write_text(json.dumps(summaries[policy], indent=2) + "\n")
            curves[policy] = points
            progress(f"{policy}: {order.height} URLs fetched in {seconds:.1f} s")
    if len(policies) > 1:
        plot(curves, out / "curves.png", f"{cycles} cycles, {len(policies)} policies")
    return summaries
