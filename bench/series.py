"""A web that changes: the same documentation sites in four Debian releases, one WARC per release.

    .venv/bin/python bench/series.py [--spec FILE] build [--update]
    .venv/bin/python bench/series.py [--spec FILE] changes [--jobs N]
    .venv/bin/python bench/series.py [--spec FILE] workload --out DIR [--run R] [--queries N]
    .venv/bin/python bench/series.py [--spec FILE] refresh [--regime growing|covered] [--runs K] [--only-run R]
                                                           [--report] [--cycles N] [--jobs N]

Each host of the series spec (``--spec``; by default ``bench/snapshots/dev-docs-over-time.json``) is one Debian
documentation package in each release the spec names (there: python3.9-doc, 3.11, 3.13, 3.14; postgresql-doc-13,
15, 17, 18; the same python-django-doc, sphinx-doc, git-doc, ... from bullseye, bookworm, trixie and sid): dated
versions of one site under one host name and one robots.txt, for a crawler that re-fetches pages. A series is named
by its spec's file name: ``bench/snapshots/py-libs-over-time.json`` (eight Python libraries' documentation,
SQLAlchemy, pytest, Tornado, Scrapy, Celery, Kombu, Flask, Werkzeug) builds ``data/py-libs-over-time/`` and
reports into ``bench/results/py-libs-over-time/``; the paths below name the default series.

``build`` writes ``data/dev-docs-over-time/<release>.warc.gz``. Packages come from the spec's mirror through an
apt configuration of the series' own under ``data/apt/`` (sources list, lists, cache, the .debs and their unpacked
trees); ``apt-get update`` runs when a release's lists are missing or with ``--update``. Nothing under /etc is
written. A host serves what a static server would from the package's HTML root: the HTML pages and the style
sheets, scripts and images they use, as ``../shared/corpus/build_snapshot.py`` does, but no ``.txt`` files: those
are the Sphinx ``_sources/`` and git's AsciiDoc copies of every page, which the newest python3.X-doc does not ship
and git-doc renamed to ``.adoc``, so keeping them would show a packaging change as hundreds of removed pages.
Links into another host of the same release (the spec's aliases and each package's own root path) are rewritten
to that host. Each response carries the validators nginx sends for a static file: ``Last-Modified``, the file's
mtime in the .deb (Debian builds stamp every file of a package with one date, so it changes with every upload and
says nothing about a page), and ``ETag`` ``"<mtime hex>-<length hex>"``; a server on loopback answers
``If-None-Match`` and ``If-Modified-Since`` from these two recorded headers. Compare ``If-Modified-Since`` for
equality, as nginx does (``if_modified_since exact``), not ``<=``: a page's date can go back from one release to the
next (a stable update built after the next release's package). ``WARC-Date`` is the ``Date`` of the release's
``InRelease`` file, when the archive published the packages; a first ``warcinfo`` record names the release, that
date and each package's version. robots.txt is the spec's text of the host, the same bytes and ``Last-Modified``
(``robots_modified``) in every release.

``changes`` reads the WARCs back and writes ``bench/results/dev-docs-over-time/changes.md``: per host and step
(release to the next), the HTML pages, URLs added, removed and kept, and of the kept pages the share whose bytes
changed, whose main text changed (the project's parser, ``parse_warcs`` with the default extractor
``trafilatura_text``; whitespace collapsed), which were rewritten (resemblance of word 5-shingle sets below 0.5,
Broder's measure), whose ETag changed, whose bytes stayed the same under a new ETag, and whose Last-Modified went
back.

``workload`` writes ``DIR/queries.tsv`` and ``DIR/seeds.txt`` for the simulator: the workload of
``bench/policies.py``'s real snapshots (``real_texts``: the query texts and the page titles, here of every release,
drawn with Zipf frequencies, shuffle seed 7 + run), one query file that serves every cycle; and the seeds of run
``--run`` from the first release's pages (run 0: each host's ``index.html``).

``refresh`` compares the refresh policies on the series: run r is ``workload --run r`` crawled with the ordering
policy ``hybrid`` and each refresh policy, in one of two regimes (``REGIMES``): ``growing``, a batch of 5 % of the
first release's HTML pages for 12 cycles (the crawl still discovers the sites), and ``covered``, 10 % for 16 cycles
(the sites are covered in about ten cycles; from then on refresh is the crawl); the releases start at evenly spaced
cycles (1, 4, 7, 10 and 1, 5, 9, 13). It writes ``bench/results/dev-docs-over-time/refresh.md`` (growing) or
``refresh-covered.md``: per policy and run the mean user-centric quality from the first version switch on by both
judges, completeness and quality ÷ completeness, the loss 1 - quality against the best rival's, freshness, the
batch's refresh share and the share of refresh slots whose check found no change (304 or unchanged); each change
model's calibration (Brier score and reliability per bin of predicted P(changed), ``summary.json``'s
``calibration``); and the split of the batch per cycle. Plots: ``<name>.png`` (quality and freshness per cycle of
each policy, means over the runs) and ``<name>-calibration.png`` (the reliability diagram). Each run's
``summary.json`` is kept under ``<name>/<policy>/run-<r>.json``.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import io
import json
import mimetypes
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from urllib.parse import quote, unquote

import polars as pl
from policies import ROOT, USER_AGENT, real_texts, write_workload
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlcycle.contracts.canonical import canonicalize
from crawlcycle.contracts.refresh_policies import NAMES as REFRESH_POLICIES
from crawlcycle.evaluation import policy_lab, repository
from crawlcycle.evaluation.judge import HTML_TYPES
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.parse.warc_records import parse_warcs
from crawlcycle.settings.sources import load_settings

# The series in use, named by its spec's file (use_spec): where its WARCs are built and its results kept.
SPEC = ROOT / "bench" / "snapshots" / "dev-docs-over-time.json"
NAME = SPEC.stem
OUT = ROOT / "data" / NAME
APT = ROOT / "data" / "apt"
RESULTS = ROOT / "bench" / "results" / NAME
CHANGES = RESULTS / "changes.md"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
PAGE_TYPES = {".html", ".htm"}
KEEP = PAGE_TYPES | {".css", ".js", ".png", ".svg", ".gif", ".jpg", ".pdf"}
MAX_ASSET = 2 * 1024 * 1024  # as build_snapshot.py: a larger image or script is left out
SHINGLE = 5
REWRITTEN = 0.5


def use_spec(path: Path) -> None:
    """Make the series of spec ``path`` the one every command builds, reads and reports (``--spec``)."""
    global SPEC, NAME, OUT, RESULTS, CHANGES
    SPEC, NAME = path.resolve(), path.stem
    OUT, RESULTS = ROOT / "data" / NAME, ROOT / "bench" / "results" / NAME
    CHANGES = RESULTS / "changes.md"


def load_spec(path: Path = SPEC) -> dict:
    """The series spec; stops with one line naming the file when it is not one."""
    try:
        spec = json.loads(path.read_text())
        releases = spec["releases"]
        for h in spec["hosts"]:
            for release, entry in h["releases"].items():
                if release not in releases or not entry["package"] or not entry["root"]:
                    raise ValueError(f"host {h['host']}: release {release!r} not in releases or no package/root")
        if not spec["mirror"].startswith("http"):
            raise ValueError(f"mirror {spec['mirror']!r} is not a URL")
        datetime.fromisoformat(spec["robots_modified"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"{path}: not a series spec ({type(e).__name__}: {e})") from None
    return spec


def warc_path(release: str) -> Path:
    return OUT / f"{release}.warc.gz"


def built(spec: dict) -> list[Path]:
    """The WARC of every release, in order; stops, naming the build, when one is missing."""
    paths = [warc_path(r) for r in spec["releases"]]
    if missing := [p for p in paths if not p.is_file()]:
        raise SystemExit(f"{missing[0]} is missing: build it from {ROOT} with "
                         f"`.venv/bin/python bench/series.py{flag()} build`")
    return paths


def title() -> str:
    """The series' name in words: dev-docs over time."""
    return NAME.replace("-over-time", " over time")


def flag() -> str:
    """The --spec flag that names the series in use, empty for the default one."""
    return "" if NAME == "dev-docs-over-time" else f" --spec {SPEC.relative_to(ROOT)}"


# --- packages ---------------------------------------------------------------------------------------------------


def apt(*args: str, cwd: Path | None = None) -> str:
    """apt-get with the series' own sources list, lists, cache and (empty) package status under data/apt/."""
    options = {"Dir::Etc::sourcelist": APT / "sources.list", "Dir::Etc::sourceparts": APT / "sources.list.d",
               "Dir::State::Lists": APT / "lists", "Dir::Cache": APT / "cache", "Dir::State::status": APT / "status",
               "APT::Sandbox::User": getpass.getuser()}  # downloads into data/apt/debs, which _apt may not write
    cmd = ["apt-get", *(a for k, v in options.items() for a in ("-o", f"{k}={v}")), *args]
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"apt-get {' '.join(args)} failed (exit {done.returncode}; its message is above)")
    return done.stdout


def in_release(suite: str) -> Path | None:
    return next((APT / "lists").glob(f"*_dists_{suite}_InRelease"), None)


def prepare_apt(spec: dict, update: bool) -> None:
    """The series' apt configuration, and its package lists when a release has none yet (or ``update``)."""
    for folder in ("sources.list.d", "lists/partial", "cache/archives/partial", "debs", "unpacked"):
        (APT / folder).mkdir(parents=True, exist_ok=True)
    (APT / "status").touch()
    (APT / "sources.list").write_text(
        "".join(f"deb [signed-by={KEYRING}] {spec['mirror']} {r} main\n" for r in spec["releases"]))
    if update or any(in_release(r) is None for r in spec["releases"]):
        apt("update")


def download(package: str, suite: str) -> Path:
    """The .deb of ``package`` in ``suite`` (its newest version there), downloaded once."""
    uris = apt("download", "--print-uris", f"{package}/{suite}").split()  # 'URI' FILE SIZE HASH
    deb = APT / "debs" / uris[1]
    if not deb.is_file():
        apt("download", f"{package}/{suite}", cwd=APT / "debs")
    return deb


def unpack(deb: Path) -> Path:
    """The unpacked tree of ``deb``; dpkg-deb keeps each file's mtime."""
    dest = APT / "unpacked" / deb.stem
    if not dest.is_dir():
        tmp = dest.with_name(dest.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # what a stopped unpacking left
        subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        tmp.rename(dest)
    return dest


def archive_date(suite: str) -> str:
    """The ``Date`` of the suite's InRelease file, as a WARC date."""
    fields = in_release(suite).read_text(errors="replace").splitlines()
    stamp = next(line.split(":", 1)[1] for line in fields if line.startswith("Date:"))
    return parsedate_to_datetime(stamp.strip()).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- WARCs ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    host: str
    package: str
    version: str
    root: Path  # the package's HTML root, unpacked
    robots: bytes


def sites(spec: dict, release: str) -> list[Site]:
    """The hosts of ``release``, their packages downloaded and unpacked."""
    out = []
    for h in spec["hosts"]:
        if entry := h["releases"].get(release):
            deb = download(entry["package"], release)
            root = unpack(deb) / entry["root"]
            if not root.is_dir():
                raise SystemExit(f"{SPEC}: {h['host']} in {release}: {entry['package']} has no {entry['root']}")
            out.append(Site(h["host"], entry["package"], unquote(deb.name.split("_")[1]), root,
                            h.get("robots", "User-agent: *\nDisallow:\n").encode()))
    return out


def link_rewriter(spec: dict, release: str) -> Callable[[str], str]:
    """Rewrites ``href`` targets that start with an alias of a host of ``release`` (its spec aliases and its
    package's root path, the latter with or without ``file://``) to that host; the longest alias wins."""
    host_of = {}
    for h in spec["hosts"]:
        if entry := h["releases"].get(release):
            for alias in (*h.get("aliases", ()), *entry.get("aliases", ()), f"/{entry['root']}/"):
                host_of[alias] = h["host"]
    alternatives = "|".join(re.escape(a) if "://" in a else "(?:file://)?" + re.escape(a)
                            for a in sorted(host_of, key=len, reverse=True))
    pattern = re.compile(r"""(href=["'])(""" + alternatives + ")")

    def rewrite(html: str) -> str:
        return pattern.sub(lambda m: f"{m[1]}http://{host_of[m[2].removeprefix('file://')]}/", html)

    return rewrite


def site_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(URL path, file) of what a static server gives from ``root``, in a fixed order; symbolic links are followed
    as a server follows them, dangling ones (Debian's shared JavaScript) skipped."""
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            ext = path.suffix.lower()
            if ext in KEEP and path.is_file() and (ext in PAGE_TYPES or path.stat().st_size <= MAX_ASSET):
                yield quote(path.relative_to(root).as_posix(), safe="/~!$&()*+,;=:@"), path


def write_response(writer: WARCWriter, url: str, body: bytes, ctype: str, mtime: int, date: str) -> None:
    """A 200 response with the headers nginx sends for a static file of that mtime and length."""
    headers = StatusAndHeaders("200 OK", [
        ("Content-Type", ctype), ("Content-Length", str(len(body))), ("Last-Modified", formatdate(mtime, usegmt=True)),
        ("ETag", f'"{mtime:x}-{len(body):x}"')], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers,
                                                  warc_headers_dict={"WARC-Date": date}))


def write_release(out: Path, release: str, date: str, hosts: list[Site], rewrite: Callable[[str], str],
                  robots_mtime: int) -> dict[str, tuple[int, int]]:
    """Writes the WARC of one release, every record dated ``date``; (HTML pages, responses) per host."""
    counts = {}
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        info = writer.create_warcinfo_record(out.name, {
            "software": "crawlcycle bench/series.py", "release": release, "archive-date": date,
            "packages": " ".join(f"{s.package}={s.version}" for s in hosts)})
        info.rec_headers.replace_header("WARC-Date", date)
        writer.write_record(info)
        for site in hosts:
            pages = responses = 0
            for rel, path in site_files(site.root):
                body = path.read_bytes()
                if path.suffix.lower() in PAGE_TYPES:
                    body = rewrite(body.decode("utf-8", "replace")).encode("utf-8")
                    ctype = "text/html; charset=utf-8"
                    pages += 1
                else:
                    ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                write_response(writer, f"http://{site.host}/{rel}", body, ctype, int(path.stat().st_mtime), date)
                responses += 1
            write_response(writer, f"http://{site.host}/robots.txt", site.robots, "text/plain", robots_mtime, date)
            counts[site.host] = (pages, responses + 1)
    tmp.rename(out)
    return counts


def build(spec: dict, update: bool) -> None:
    prepare_apt(spec, update)
    OUT.mkdir(parents=True, exist_ok=True)
    robots_mtime = int(datetime.fromisoformat(spec["robots_modified"]).timestamp())
    for release in spec["releases"]:
        t0 = time.perf_counter()
        path = warc_path(release)
        counts = write_release(path, release, archive_date(release), sites(spec, release),
                               link_rewriter(spec, release), robots_mtime)
        print(f"{path.relative_to(ROOT)}: {sum(p for p, _ in counts.values())} HTML pages, "
              f"{sum(r for _, r in counts.values())} responses, {path.stat().st_size / 1e6:.1f} MB, "
              f"{time.perf_counter() - t0:.0f} s; " + ", ".join(f"{h} {p}" for h, (p, _) in counts.items()),
              flush=True)


# --- changes ----------------------------------------------------------------------------------------------------


def read_release(warc: Path, work: Path, jobs: int) -> tuple[dict[str, str], pl.DataFrame]:
    """(the WARC's warcinfo fields; host, url, sha1, etag, modified (epoch seconds), text of each HTML page), the
    main text by the project's parser with its default extractor, its output and parse cache kept in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    settings = load_settings(environ={}, overrides={"parse_workers": jobs,
                                                    "parse_cache": str(work / "parse-cache.sqlite")})
    info, rows = {}, []
    with warc.open("rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "warcinfo":
                info = dict(line.split(": ", 1) for line in rec.content_stream().read().decode().splitlines()
                            if ": " in line)
                continue
            head = rec.http_headers
            if rec.rec_type != "response" or head is None \
                    or (head.get_header("Content-Type") or "").split(";")[0].strip() not in HTML_TYPES:
                continue
            url = canonicalize(rec.rec_headers.get_header("WARC-Target-URI"), None, settings.url_rules)
            rows.append((url.split("/")[2], url, hashlib.sha1(rec.content_stream().read()).hexdigest(),
                         head.get_header("ETag"),
                         int(parsedate_to_datetime(head.get_header("Last-Modified")).timestamp())))
    pages = pl.DataFrame(rows, schema=["host", "url", "sha1", "etag", "modified"], orient="row")
    parsed = parse_warcs([warc], work / warc.name.split(".")[0], settings)
    return info, pages.join(pl.read_parquet(parsed.pages_path, columns=["url", "text"]), on="url", how="left")


def shingles(text: str | None) -> set[tuple[str, ...]]:
    words = (text or "").casefold().split()
    return {tuple(words[i:i + SHINGLE]) for i in range(max(len(words) - SHINGLE + 1, 1))} if words else set()


def resemblance(a: str | None, b: str | None) -> float:
    """Broder's resemblance of two texts: shared word 5-shingles over all of them (1 when both are empty)."""
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def step(before: pl.DataFrame, after: pl.DataFrame) -> dict[str, int]:
    """What changed from one version of a site (or of all) to the next: URL counts, and counts of kept pages."""
    kept = before.join(after, on="url", suffix="_next")

    def flat(text: str | None) -> str:
        return " ".join((text or "").split())

    pairs = list(zip(kept["text"], kept["text_next"], strict=True))
    return {
        "before": before.height, "after": after.height, "kept": kept.height,
        "added": after.join(before, on="url", how="anti").height,
        "removed": before.join(after, on="url", how="anti").height,
        "bytes": kept.filter(pl.col("sha1") != pl.col("sha1_next")).height,
        "text": sum(flat(a) != flat(b) for a, b in pairs),
        "rewritten": sum(resemblance(a, b) < REWRITTEN for a, b in pairs),
        "etag": kept.filter(pl.col("etag") != pl.col("etag_next")).height,
        "same_bytes_new_etag": kept.filter((pl.col("sha1") == pl.col("sha1_next"))
                                           & (pl.col("etag") != pl.col("etag_next"))).height,
        "earlier": kept.filter(pl.col("modified_next") < pl.col("modified")).height,
    }


def share(n: int, of: int) -> str:
    return f"{100 * n / of:.1f} %" if of else "—"


def changes(spec: dict, jobs: int) -> str:
    """The changes table (markdown) of the built series."""
    warcs = built(spec)
    releases = spec["releases"]
    read = [read_release(w, OUT / "parsed", jobs) for w in warcs]
    infos = [info for info, _ in read]
    frames = [pages for _, pages in read]
    hosts = [h["host"] for h in spec["hosts"]]
    packages = [dict(p.split("=", 1) for p in info["packages"].split()) for info in infos]
    lines = [f"# {title()}: what changes from one Debian release to the next", "",
             f"Built with `.venv/bin/python bench/series.py{flag()} build` from `{SPEC.relative_to(ROOT)}`, measured "
             f"with `.venv/bin/python bench/series.py{flag()} changes`. Pages are the HTML responses; main text is the "
             "project's parser's (`parse_warcs`, extractor `trafilatura_text`), whitespace collapsed; a page is "
             "rewritten when the resemblance of its old and new main text (shared word "
             f"{SHINGLE}-shingles over all of them) is below {REWRITTEN}.", "",
             "## Versions", "", "HTML pages per host and release, with the package and version they come from.", "",
             "| host | " + " | ".join(releases) + " |", "|---" * (len(releases) + 1) + "|"]
    for h in spec["hosts"]:
        cells = []
        for r, frame, pkgs in zip(releases, frames, packages, strict=True):
            entry = h["releases"].get(r)
            n = frame.filter(pl.col("host") == h["host"]).height
            cells.append(f"{n:,} ({entry['package']} {pkgs[entry['package']]})" if entry else "—")
        lines.append(f"| {h['host']} | " + " | ".join(cells) + " |")
    lines += ["| **all** | " + " | ".join(f"**{f.height:,}**" for f in frames) + " |",
              "| archive date | " + " | ".join(i["archive-date"][:10] for i in infos) + " |",
              "| WARC size | " + " | ".join(f"{w.stat().st_size / 1e6:.1f} MB" for w in warcs) + " |", "",
              "## Steps", "",
              "Pages: HTML pages before → after. Of the kept URLs (same URL in both releases): bytes changed, "
              "main text changed, rewritten, ETag changed, the same bytes under a new ETag (a conditional request "
              "fetches them again for nothing), and Last-Modified earlier than before (a server that answers 304 "
              "when Last-Modified ≤ If-Modified-Since would hide those changes).", "",
              "| step | host | pages | added | removed | kept | bytes changed | main text changed | rewritten "
              "| ETag changed | same bytes, new ETag | Last-Modified earlier |", "|---" * 12 + "|"]
    for i in range(len(releases) - 1):
        name = f"{releases[i]} → {releases[i + 1]}"
        for host in [*hosts, None]:
            a, b = frames[i], frames[i + 1]
            if host is not None:
                a, b = a.filter(pl.col("host") == host), b.filter(pl.col("host") == host)
            s = step(a, b)
            kept = s["kept"]
            label = host or "**all**"
            lines.append(f"| {name} | {label} | {s['before']:,} → {s['after']:,} | {s['added']:,} | {s['removed']:,} "
                         f"| {kept:,} | " + " | ".join(share(s[k], kept) for k in (
                             "bytes", "text", "rewritten", "etag", "same_bytes_new_etag", "earlier")) + " |")
    return "\n".join(lines) + "\n"


# --- workload ---------------------------------------------------------------------------------------------------


def workload(spec: dict, out: Path, run: int, n_queries: int) -> None:
    """``out/queries.tsv`` (one query file for every cycle) and ``out/seeds.txt`` of run ``run``."""
    warcs = built(spec)
    texts = [t for w in warcs for t in real_texts(w)]  # the query texts (repeated) and every release's titles
    out.mkdir(parents=True, exist_ok=True)
    write_workload(out / "queries.tsv", policy_lab.zipf_workload(texts, n_queries, policy_lab.WORKLOAD_SEED + run))
    seeds = policy_lab.seed_set(policy_lab.html_pages(warcs[0]), run, "/index.html")
    (out / "seeds.txt").write_text("".join(u + "\n" for u in seeds))
    print(f"{out / 'queries.tsv'}: {n_queries} queries; {out / 'seeds.txt'}: {len(seeds)} seeds")


# --- refresh policies on the series ------------------------------------------------------------------------------


# The two regimes a crawl of a few sites lives through: still discovering (a batch of 5 % of the first release's HTML
# pages: refreshes compete with new pages all along), and covered (10 %: the sites are crawled in about ten cycles,
# from then on refresh is the crawl). Each: batch share, cycles, and where its results are kept.
REGIMES = {"growing": (0.05, 12, "refresh"), "covered": (0.10, 16, "refresh-covered")}


def refresh(spec: dict, runs: list[int], policies: list[str], regime: str, jobs: int, switch: str, work: Path,
            revisit_cycles: int | None = None, cycles: int | None = None) -> None:
    """The refresh ``policies`` on the series in each of ``runs``, in ``regime`` (REGIMES; ``cycles`` instead of its
    own); each run's summaries kept in RESULTS, labelled ``<policy>-every-<n>`` under ``revisit_cycles`` n
    (fixed_revisit_cycles: the interval of fixed, adaptive's first)."""
    warcs = built(spec)
    share, own_cycles, name = REGIMES[regime]
    cycles = cycles or own_cycles
    starts = [1 + round(i * cycles / len(warcs)) for i in range(len(warcs))]
    batch = round(share * sum(map(len, policy_lab.html_pages(warcs[0]).values())))
    interval = {"fixed_revisit_cycles": revisit_cycles} if revisit_cycles else {}
    suffix = f"-every-{revisit_cycles}" if revisit_cycles else ""
    settings = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": batch, "policy": "hybrid",
                                                     **interval})
    for r in runs:
        workload(spec, work / f"run-{r}", r, 3000)
        t0 = time.perf_counter()

        def progress(m: str, r: int = r, t0: float = t0) -> None:
            if "shard" not in m:
                print(f"  [run {r} {time.perf_counter() - t0:6.0f} s] {m}", flush=True)

        summaries = simulate(settings, warcs, work / f"run-{r}" / "queries.tsv", work / f"run-{r}" / "seeds.txt",
                             ["hybrid"], cycles, work / f"run-{r}" / f"{name}{suffix}", jobs=jobs, starts=starts,
                             switch=switch, refresh_policies=policies, cache=work / "cache", progress=progress)
        for s in summaries.values():
            s["label"], s["regime"] = s["refresh_policy"] + suffix, regime
            (RESULTS / name / s["label"]).mkdir(parents=True, exist_ok=True)
            (RESULTS / name / s["label"] / f"run-{r}.json").write_text(json.dumps(s, indent=1))
        print(f"run {r}: {time.perf_counter() - t0:.0f} s", flush=True)


def refresh_results(runs: int, regime: str) -> str:
    """The report of runs 0 .. runs-1 of ``regime`` from their kept summaries (``<name>.md``, ``<name>.png`` and
    ``<name>-calibration.png``, name as REGIMES gives); its text."""
    name = REGIMES[regime][2]
    per_run = []
    for r in range(runs):
        files = sorted((RESULTS / name).glob(f"*/run-{r}.json"))
        if not files:
            raise SystemExit(f"run {r}: no {RESULTS / name}/*/run-{r}.json; run "
                             f"`series.py{flag()} refresh --regime {regime}` first")
        per_run.append({f.parent.name: json.loads(f.read_text()) for f in files})
    shared = set.intersection(*(set(run) for run in per_run))  # a policy is compared on the runs it has them all
    per_run = [{n: s for n, s in run.items() if n in shared} for run in per_run]
    first = next(iter(per_run[0].values()))
    starts = [v["start"] for v in first["versions"]]
    text = refresh_report(per_run, starts, first["batch_size"], first["switch"], regime)
    refresh_plot(per_run, RESULTS / f"{name}.png", starts)
    calibration_plot(per_run, RESULTS / f"{name}-calibration.png")
    (RESULTS / f"{name}.md").write_text(text)
    return text


def _after(s: dict, figure: str) -> float | None:
    return s["repository"]["mean_after_first_switch"].get(figure)  # completeness: none in runs made before it


def _mean(values: list[float | None], digits: int) -> str:
    return "-" if None in values else f"{sum(values) / len(values):.{digits}f}"


def _no_change(s: dict) -> tuple[float | None, int]:
    """The share of the refresh slots (from the first switch on) whose check found no change (304 or unchanged), and
    the refreshes; None in runs made before the outcomes were kept."""
    outcomes = s.get("refresh_outcomes")
    if outcomes is None:
        return None, 0
    slots = sum(outcomes.values())
    return (outcomes.get("not_modified", 0) + outcomes.get("unchanged", 0)) / slots if slots else None, slots


def refresh_report(per_run: list[dict[str, dict]], starts: list[int], batch: int, switch: str, regime: str) -> str:
    """The table of each refresh policy's quality over the runs, paired against the best rival, the slots that
    found no change, the change models' calibration and the split."""
    names = list(per_run[0])
    share = round(100 * REGIMES[regime][0])
    lines = [f"# Refresh policies on {title()}: {regime} sites\n",
             f"{len(per_run)} runs (workload and seeds of `series.py{flag()} workload --run r`), ordering policy "
             f"hybrid, {per_run[0][names[0]]['cycles']} cycles, batch {batch} ({share} % of the first release's HTML "
             f"pages), releases from cycles {', '.join(map(str, starts))} (`--switch {switch}`). Means over the "
             "cycles from "
             "the first version switch on; quality is user-centric (Pandey & Olston 2005), by the reference ranker "
             "and by the independent BM25 judge; loss = 1 - quality. Completeness is the quality the same stored "
             "pages would give fresh and in the live order (no refresh policy can beat it with the pages it chose); "
             "completeness - quality is what stale copies and the crawl's own partial statistics cost.\n",
             "| refresh policy | quality per run | mean (min-max) | quality, BM25 judge | completeness | completeness, "
             "BM25 judge | quality ÷ completeness | freshness | refresh share of the batch | refresh slots that "
             "found no change |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        q = [_after(run[name], "quality") for run in per_run]
        qb = [_after(run[name], "quality_bm25s") for run in per_run]
        complete = [_mean([_after(run[name], f) for run in per_run], 4) for f in ("complete", "complete_bm25s")]
        fr = [_after(run[name], "freshness") for run in per_run]
        share = [_after(run[name], "batch_refresh") / max(1e-9, _after(run[name], "batch_refresh")
                                                          + _after(run[name], "batch_new")) for run in per_run]
        ratio = [_after(run[name], "quality") / c if (c := _after(run[name], "complete")) else None for run in per_run]
        idle = [_no_change(run[name]) for run in per_run]
        idle_text = "-" if any(v is None for v, _ in idle) else \
            f"{sum(v for v, _ in idle) / len(idle):.2f} of {sum(n for _, n in idle) / len(idle):.0f}"
        lines.append(f"| {name} | {' / '.join(f'{v:.4f}' for v in q)} | {sum(q) / len(q):.4f} ({min(q):.4f}-"
                     f"{max(q):.4f}) | {sum(qb) / len(qb):.4f} | {' | '.join(complete)} | {_mean(ratio, 3)} | "
                     f"{sum(fr) / len(fr):.3f} | {sum(share) / len(share):.3f} | {idle_text} |")
    lines += ["", "Paired, per run: impact against the best rival of the same run (by the reference ranker; by the "
              "BM25 judge).\n", "| run | best rival | its quality | impact's | loss ratio impact / rival | "
              "BM25: best rival | loss ratio |", "|---|---|---|---|---|---|---|"]
    for r, run in enumerate(per_run):
        if "impact" not in run or len(run) < 2:
            continue
        row = []
        for figure in ("quality", "quality_bm25s"):
            rivals = {n: _after(s, figure) for n, s in run.items() if n != "impact"}
            top = max(rivals.values())
            best = " = ".join(n for n, q in rivals.items() if q == top)  # fixed and adaptive may refresh nothing
            ratio = (1 - _after(run["impact"], figure)) / max(1e-12, 1 - top)
            row.append((best, top, _after(run["impact"], figure), ratio))
        (b, bq, iq, ratio), (bb, _, _, ratio_b) = row
        lines.append(f"| {r} | {b} | {bq:.4f} | {iq:.4f} | {ratio:.2f} | {bb} | {ratio_b:.2f} |")
    lines += calibration_lines(per_run)
    lines += ["", "The batch of `impact` per cycle, new URLs / refreshes (run 0), and its 304 answers:\n",
              "| cycle | new | refresh | not modified (304) | changed | gone |", "|---|---|---|---|---|---|"]
    for row, fig in zip(per_run[0]["impact"]["repository"]["cycles"] if "impact" in per_run[0] else [],
                        per_run[0].get("impact", {}).get("refresh", []), strict=True):
        lines.append(f"| {row['cycle']} | {row['batch_new']} | {row['batch_refresh']} | "
                     f"{fig['checks_not_modified']} | {fig['checks_changed']} | {fig['checks_gone']} |")
    return "\n".join(lines) + "\n"


MODELS = {"p_poisson": "poisson", "p_bursts": "bursts"}


def calibration_lines(per_run: list[dict[str, dict]]) -> list[str]:
    """Each change model's Brier score per refresh policy's crawl (mean over the runs), and its reliability over all
    of them: per bin of predicted P(changed), the mean prediction against the share that had changed."""
    kept = {n: [run[n]["calibration"] for run in per_run if run[n].get("calibration")] for n in per_run[0]}
    kept = {n: c for n, c in kept.items() if c}
    if not kept:
        return []
    lines = ["", "How well each change model predicts which stored pages differ from the live web at the next fetch "
             "(every stored page, every cycle from the first switch on; both models read the same crawl state). "
             "Brier score, mean over the runs (lower is better; always answering the base rate scores rate × (1 - "
             "rate)):\n", "| crawl (refresh policy) | pages × cycles | changed | " +
             " | ".join(f"Brier, {m}" for m in MODELS.values()) + " |", "|---|---|---|" + "---|" * len(MODELS)]
    for name, cals in kept.items():
        brier = [f"{sum(c[m]['brier'] for c in cals) / len(cals):.4f}" for m in MODELS]
        lines.append(f"| {name} | {sum(c['pages'] for c in cals) / len(cals):.0f} | "
                     f"{sum(c['changed'] for c in cals) / len(cals):.3f} | {' | '.join(brier)} |")
    lines += ["", "Reliability, all crawls and runs pooled: per bin of predicted P(changed), pages, mean prediction "
              "and share changed:\n", "| P(changed) | " + " | ".join(f"{m}: pages, predicted, changed"
                                                                     for m in MODELS.values()) + " |",
              "|---|" + "---|" * len(MODELS)]
    for b in range(10):
        cells = []
        for m in MODELS:
            rows = [row for cals in kept.values() for c in cals for row in c[m]["bins"] if row["bin"] == b]
            n = sum(r["n"] for r in rows)
            cells.append("-" if not n else f"{n}, {sum(r['predicted'] * r['n'] for r in rows) / n:.3f}, "
                                           f"{sum(r['observed'] * r['n'] for r in rows) / n:.3f}")
        lines.append(f"| {b / 10:.1f}-{(b + 1) / 10:.1f} | {' | '.join(cells)} |")
    return lines


def calibration_plot(per_run: list[dict[str, dict]], path: Path) -> None:
    """The reliability diagram of each change model, all crawls and runs pooled (``calibration_lines``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cals = [run[n]["calibration"] for run in per_run for n in run if run[n].get("calibration")]
    if not cals:
        return
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect")
    for m, label in MODELS.items():
        bins: dict[int, list[float]] = {}
        for c in cals:
            for row in c[m]["bins"]:
                acc = bins.setdefault(row["bin"], [0, 0.0, 0.0])
                acc[0] += row["n"]
                acc[1] += row["predicted"] * row["n"]
                acc[2] += row["observed"] * row["n"]
        xs = sorted(bins)
        brier = sum(c[m]["brier"] for c in cals) / len(cals)
        ax.plot([bins[b][1] / bins[b][0] for b in xs], [bins[b][2] / bins[b][0] for b in xs], marker="o",
                label=f"{label} (Brier {brier:.3f})")
    ax.set_xlabel("predicted P(changed) at the next fetch")
    ax.set_ylabel("share of stored pages that had changed")
    ax.set_title("change models: reliability")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def refresh_plot(per_run: list[dict[str, dict]], path: Path, starts: list[int]) -> None:
    """Quality and freshness per cycle of each refresh policy, means over the runs (``repository.plot``)."""
    means = {}
    for name in per_run[0]:
        rows = [run[name]["repository"]["cycles"] for run in per_run]
        means[name] = [{"cycle": c["cycle"], **{f: sum(rs[i][f] for rs in rows) / len(rows)
                                                for f in ("quality", "freshness")}}
                       for i, c in enumerate(rows[0])]
    repository.plot(means, path, f"{title()}: each refresh policy, mean over runs", starts[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", type=Path, default=SPEC, help="the series spec (default: %(default)s)")
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="download the packages and write one WARC per release")
    b.add_argument("--update", action="store_true", help="run apt-get update even when the lists are there")
    c = sub.add_parser("changes", help="measure what changes between releases into bench/results/<series>/changes.md")
    c.add_argument("--jobs", type=int, default=1, help="parser processes (0 = one per core)")
    w = sub.add_parser("workload", help="write queries.tsv and seeds.txt for the simulator")
    w.add_argument("--out", type=Path, required=True)
    w.add_argument("--run", type=int, default=0, help="run 0: each host's index.html; run r: a random page per host")
    w.add_argument("--queries", type=int, default=3000)
    f = sub.add_parser("refresh", help="compare the refresh policies on the series")
    f.add_argument("--runs", type=int, default=3, help="runs 0 .. K-1 (each its own workload and seeds)")
    f.add_argument("--only-run", type=int, help="simulate this run alone (then report on every run kept)")
    f.add_argument("--report", action="store_true", help="report on the kept runs without simulating")
    f.add_argument("--policies", nargs="+", choices=REFRESH_POLICIES, default=list(REFRESH_POLICIES),
                   help="simulate these refresh policies (the report reads every policy kept)")
    f.add_argument("--revisit-cycles", type=int, help="fixed_revisit_cycles for fixed and adaptive (default: the "
                   "setting's, Nutch's 30 days as 30 cycles); their results are kept as <policy>-every-<n>")
    f.add_argument("--regime", choices=list(REGIMES), default="growing",
                   help="growing: batch 5 %% of the first release's HTML pages, 12 cycles; covered: 10 %%, 16 cycles")
    f.add_argument("--cycles", type=int, help="cycles instead of the regime's")
    f.add_argument("--jobs", type=int, default=1, help="refresh policies simulated in parallel")
    f.add_argument("--switch", choices=["at-start", "drawn"], default="at-start",
                   help="every page moves at its release's start, or at a cycle drawn for it (more ground truths)")
    f.add_argument("--work", type=Path, default=ROOT / "data" / "bench-refresh")
    args = ap.parse_args()
    use_spec(args.spec)
    spec = load_spec(SPEC)
    t0 = time.perf_counter()
    if args.command == "build":
        build(spec, args.update)
    elif args.command == "changes":
        text = changes(spec, args.jobs)
        CHANGES.parent.mkdir(parents=True, exist_ok=True)
        CHANGES.write_text(text)
        print(text)
    elif args.command == "refresh":
        if not args.report:
            if args.revisit_cycles and set(args.policies) - {"fixed", "adaptive"}:
                raise SystemExit("--revisit-cycles: only fixed and adaptive have a revisit interval; add --policies "
                                 "fixed adaptive")
            refresh(spec, [args.only_run] if args.only_run is not None else list(range(args.runs)), args.policies,
                    args.regime, args.jobs, args.switch, args.work, args.revisit_cycles, args.cycles)
        print(refresh_results(args.runs, args.regime))
    else:
        workload(spec, args.out, args.run, args.queries)
    print(f"{args.command}_seconds={time.perf_counter() - t0:.0f}")


if __name__ == "__main__":
    main()
