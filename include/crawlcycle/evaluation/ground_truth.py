"""Ground truth of a simulation: what each page of a snapshot is worth to the workload, by a panel of judges.

The reference judge runs the product's own parse stage over every snapshot record, merges it into a fresh crawl
database through the product's merge SQL, links it (in-degree, PageRank), indexes it and ranks the workload with
the reference ranker; each judge of the panel (``crawlcycle.evaluation.judge.PANEL``: real search libraries,
analyzers and text views) ranks the same workload over its own view of each page. Each judge's top K of each query
is kept
(``Truth.top_k``); a page's true impact under a judge is the sum of f(q) over the queries whose top K by that judge
hold it. Snapshot pages are the 2xx records the parser reads as HTML-or-unknown (``reason`` not ``not_html``), with
their main-text signature (``content_hash``).

A web that changes (a ``Series`` of versions) has a ground truth per cycle (:func:`cycle_truths`): that of the web
served at the cycle, each URL at its version then (URLs its version lacks, which answer 404, are not in it).

Computing it takes minutes on a real snapshot, so it is kept under its ``truth_key`` (the input files' bytes,
the parse fingerprint, the ranker settings and the code and SQL it runs) and reused while none of those changes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import polars as pl
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.contracts.canonical import host_of
from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import SQL_DIR, connect, migrate, query, run_sql, staged
from crawlcycle.devtools.warc_server import INDEX_FILE, Series, host_key
from crawlcycle.evaluation import judge
from crawlcycle.models import refit
from crawlcycle.parse import parse_cache
from crawlcycle.parse.warc_records import parse_warcs
from crawlcycle.ranking import ranker
from crawlcycle.ranking.query_log import read_partition, write_partitions
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import with_overrides

HOT_SHARE = 0.10


JUDGES = ("reference", *(j.name for j in judge.PANEL))  # our reference ranker, and engines we did not write
# The judges the reference ordering runs by and the repository's quality is measured by: the reference ranker and the
# first judge of the panel (every judge would double the lab's time).
LEAD_JUDGES = JUDGES[:2]
# What the ground truth depends on besides its inputs, the parse fingerprint and the ranker settings.
_TRUTH_CODE = ("evaluation/ground_truth.py", "evaluation/judge.py", "ranking/ranker.py", "ranking/query_log.py",
               "models/refit.py", "models/graph.py")
_TRUTH_SQL = ("ranking/ranker/*.sql", "pipeline/update/discovered_urls.sql", "pipeline/update/merge_parse.sql",
              "models/graph/*.sql", "evaluation/ground_truth/*.sql", "models/refit/link_measures.sql",
              "migrations/*.sql", "views/*.sql")
_RANKER_SETTINGS = ("top_k", "bm25_k1", "bm25_weights", "bm25_b", "prestige_weight", "bm25_depth", "ranker_stemmer",
                    "ranker_stopwords", "ranker_field_words", "max_urls_per_host")


@dataclass(frozen=True)
class Truth:
    """Every snapshot page with its true impact under each judge (``impact`` by the reference ranker,
    ``impact_<judge>`` by the others), its in-degree and main-text signature; each judge's top K of each query."""

    pages: pl.DataFrame  # url, host, in_links, content_hash, impact, impact_<judge> per panel judge, hot
    hosts: set[str]  # every host a crawl of the snapshot can meet: record, link and redirect hosts
    top_k: pl.DataFrame  # judge, query, rank, url
    folder: Path | None = None  # where it is kept (its crawl database included)

    @staticmethod
    def column(judge: str) -> str:
        return "impact" if judge == "reference" else f"impact_{judge}"

    def total(self, judge: str = "reference") -> float:
        return float(self.pages[self.column(judge)].sum())

    def impact(self, judge: str) -> pl.DataFrame:
        """Every page's true impact by ``judge`` (url, host, impact, and page = url), and the same for each directory
        URL that the snapshot server redirects to a page (``aliases``: url the directory, page the page's own)."""
        pages = self.pages.select("url", "host", impact=self.column(judge), page="url")
        by_alias = self.aliases().join(pages.drop("url"), on="page").select(pages.columns)
        return pl.concat([pages, by_alias])

    def aliases(self) -> pl.DataFrame:
        """url, page: every ``dir/`` and ``dir`` that the snapshot server redirects to the page ``dir/index.html``
        (``warc_server.directory_index``) and that is no page itself."""
        index = self.pages.filter(pl.col("url").str.ends_with("/" + INDEX_FILE)).select(
            page="url", dir=pl.col("url").str.strip_suffix(INDEX_FILE))
        bare = index.filter(pl.col("dir").str.count_matches("/") > 3)  # not the host's root: that has its slash
        rows = pl.concat([index.select(url="dir", page="page"),
                          bare.select(url=pl.col("dir").str.strip_suffix("/"), page="page")])
        return rows.filter(~pl.col("url").is_in(self.pages["url"].implode())).sort("url")

    def impact_file(self, judge: str) -> Path:
        """The Parquet file of :meth:`impact`, kept beside the truth: what the reference ordering oracle reads."""
        return self.folder / f"impact-{judge}.parquet"


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def truth_key(settings: Settings, snapshots: list[Path], query_file: Path) -> str:
    """What the ground truth is a function of: the snapshot and query files (their bytes), the parse fingerprint,
    the ranker settings and the code and SQL that compute it."""
    here = Path(__file__).resolve().parents[1]
    parts = [*(_file_digest(p) for p in [*snapshots, query_file]), parse_cache.fingerprint(settings),
             json.dumps({n: getattr(settings, n) for n in _RANKER_SETTINGS}, sort_keys=True)]
    parts += [hashlib.sha256((here / name).read_bytes()).hexdigest() for name in _TRUTH_CODE]
    parts += [hashlib.sha256(f.read_bytes()).hexdigest() for g in _TRUTH_SQL for f in sorted(SQL_DIR.glob(g))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def ground_truth(settings: Settings, snapshots: list[Path], query_file: Path, cache: Path) -> tuple[Truth, bool]:
    """The ground truth of (snapshot, queries, settings, code), computed once and kept in ``cache`` under its
    ``truth_key``; (truth, whether it came from the cache)."""
    folder = cache / f"truth-{truth_key(settings, snapshots, query_file)[:20]}"
    if (folder / "truth.parquet").is_file():
        meta = json.loads((folder / "truth.json").read_text())
        return Truth(pl.read_parquet(folder / "truth.parquet"), set(meta["hosts"]),
                     pl.read_parquet(folder / "top_k.parquet"), folder), True
    work = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
    try:
        truth = _compute_truth(settings, snapshots, query_file, work)
        truth.pages.write_parquet(work / "truth.parquet")
        truth.top_k.write_parquet(work / "top_k.parquet")
        for name in JUDGES:
            truth.impact(name).write_parquet(truth.impact_file(name))
        (work / "truth.json").write_text(json.dumps({"hosts": sorted(truth.hosts), "pages": truth.pages.height,
                                                     "snapshots": [str(p) for p in snapshots],
                                                     "queries": str(query_file)}, indent=1))
        try:
            work.rename(folder)
        except OSError:  # another run kept the same truth meanwhile
            if not (folder / "truth.parquet").is_file():
                raise
    finally:  # what is left of it: a failed computation, or the copy of a truth another run kept meanwhile
        shutil.rmtree(work, ignore_errors=True)
    return Truth(truth.pages, truth.hosts, truth.top_k, folder), False


def cycle_truths(settings: Settings, web: Series, cycles: int, query_file: Path, cache: Path
                 ) -> tuple[list[Truth], list[dict]]:
    """The ground truth of each cycle 1..``cycles`` of ``web``: that of the web it serves at the cycle (written as
    one WARC for the computation, then removed), computed once per distinct web and kept in ``cache`` like any
    other; and per cycle where it came from: the cycle whose web it shares (``same_as``), or its folder, whether
    it was kept and the seconds it took."""
    truths: list[Truth] = []
    stats: list[dict] = []
    served = None
    for cycle in range(1, cycles + 1):
        now = web.served(cycle)
        if now == served:
            truths.append(truths[-1])
            stats.append({"cycle": cycle, "same_as": stats[-1].get("same_as", batch_cycles(fetch=cycle)[0])})
            continue
        served = now
        t0 = time.perf_counter()
        live = cache / f"live-{os.getpid()}.warc.gz"
        cache.mkdir(parents=True, exist_ok=True)
        try:
            web.write_live(cycle, live)
            truth, cached = ground_truth(settings, [live], query_file, cache)
        finally:
            live.unlink(missing_ok=True)
        truths.append(truth)
        stats.append({"cycle": cycle, "folder": str(truth.folder), "cached": cached,
                      "seconds": round(time.perf_counter() - t0, 2)})
    return truths, stats


def _compute_truth(settings: Settings, snapshots: list[Path], query_file: Path, folder: Path) -> Truth:
    """Parse, link, index and rank the whole snapshot in a fresh database under ``folder``; judge it again with
    each judge of the panel."""
    shutil.rmtree(folder, ignore_errors=True)
    day = date.fromisoformat(settings.start_date)
    settings = with_overrides(settings, {"db_path": str(folder / "truth.duckdb"), "data_dir": str(folder),
                                         "query_log_dir": str(folder / "query_log")})
    write_partitions(query_file, folder / "query_log", [day])
    workload = read_partition(settings, day).rows.group_by("query").agg(frequency=pl.col("frequency").sum())
    parsed = parse_warcs(snapshots, folder / "parse", settings)
    parsed_pages = pl.read_parquet(parsed.pages_path).filter(pl.col("status").is_between(200, 299))
    pages = parsed_pages.with_columns(host=pl.col("url").map_elements(host_of, return_dtype=pl.String))
    links = pl.read_parquet(parsed.links_path).unique(["src", "dst", "anchor"], keep="first", maintain_order=True)
    # one parse of the snapshot, no fetch: no redirects, no sitemaps
    no_fetches = pl.DataFrame(schema={"url": pl.String, "final_url": pl.String, "outcome": pl.String,
                                      "file_index": pl.Int64, "row_index": pl.Int64})
    no_sitemaps = pl.DataFrame(schema={"sitemap": pl.String, "url": pl.String, "reason": pl.String,
                                       "file_index": pl.Int64, "row_index": pl.Int64})
    rejects = pl.read_parquet(parsed.rejects_path).select("src", "raw", "reason")
    with connect(settings) as con, staged(con, s_pages=pages, s_links=links, s_rejects=rejects, s_fetch_log=no_fetches,
                                          s_found_links=links.with_row_index("seq"), s_redirects=no_fetches,
                                          s_sitemap_urls=no_sitemaps):
        migrate(con)
        con.create_function("host_of", host_of, ["VARCHAR"], "VARCHAR")
        run_sql(con, "pipeline/update/discovered_urls")
        # every page of the snapshot is judged, whatever scope the crawls are given
        run_sql(con, "pipeline/update/merge_parse", cycle=1, max_urls_per_host=settings.max_urls_per_host,
                scope=Settings().scope_rules())
        refit.refit_link_graph(con, 1)
        ranker.index_pages(con, 1, ranker.Analyzer.of(settings))
        ranker.rank_queries(con, settings, 1, workload["query"].to_list())
        pages = query(con, "evaluation/ground_truth/truth_pages")
        reference = query(con, "evaluation/ground_truth/reference_top_k", cycle=1)
        hosts = set(con.sql("SELECT DISTINCT host FROM frontier").pl()["host"])
    views = {"visible": judge.visible_pages(snapshots, settings),
             "main": parsed_pages.select("url", "title", "text").unique("url", keep="first", maintain_order=True)}
    tops = {"reference": reference} | {j.name: judge.judge_top_k(j, views[j.text], workload, settings.top_k)
                                       for j in judge.PANEL}
    for name, top in tops.items():
        pages = pages.with_columns(judge.impact_of(pages["url"], top, workload)["impact"].alias(Truth.column(name)))
    hot = max(1, math.ceil(HOT_SHARE * pages.height))
    pages = pages.with_columns(hot=pl.col("in_links").rank("ordinal", descending=True) <= hot)
    top_k = pl.concat([top.select(judge=pl.lit(name), query="query", rank=pl.col("rank").cast(pl.Int64), url="url")
                       for name, top in tops.items()])
    return Truth(pages, hosts | _redirect_hosts(snapshots), top_k, folder)


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
