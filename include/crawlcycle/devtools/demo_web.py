"""A generated demo web: topical hosts, real HTML, skewed links, a synthetic query log, and a web that changes by
date. This module writes it as a whole (``generate``): a WARC per day, the seeds, ``behaviour.json`` and the query
log. Its parts: the words (``crawlcycle.devtools.demo_vocabulary``), the hosts, pages and links and how they change
by date (``crawlcycle.devtools.demo_link_graph``), the HTML of the pages (``crawlcycle.devtools.demo_pages``) and the
query log (``crawlcycle.devtools.demo_query_log``).

Everything is a pure function of the seed: the same arguments give byte-identical files, and the web of a date is the
same whatever number of days is written.

Awkward cases
  301/302 redirects (one chain of two hops, one to another host), links to missing
  pages (404), a slow host (``behaviour.json``), a host whose robots.txt disallows ``/drafts/`` and
  asks for ``Crawl-delay: 0.2``, a host with no robots.txt (404), a tail host whose robots.txt names a
  sitemap listing all its pages, a page linked with a percent-encoded ``~`` (``/%7Eeditor/``), and
  non-HTML files (PDF, plain text, PNG).

The web changes by date
  One WARC per day of the query log (``web.warc.gz`` the first day, ``web-<date>.warc.gz`` the others), each the
  whole web of that day, served as a dated series (``crawlcycle.devtools.warc_server.Series``, at-start switching).
  A host's ``/latest.html`` redirects to its newest page of the day. Day 0 is ``start_date``; a record's
  ``WARC-Date`` is the midnight before its day.

  Every response carries nginx's validators: ``Last-Modified``, the midnight before the first day of the run of days
  its bytes have been the same, and ``ETag`` ``"<that time, hex>-<length, hex>"``. In ``behaviour.json``, besides
  the slow host, one host ignores conditional requests (``conditional: false``), one sends one ``Last-Modified``
  for every file and no ETag (``validators: fixed-date``) and one sends no validators (``validators: none``); the
  server answers conditional requests for the others.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import struct
import uuid
import zlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from html import escape
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlcycle.devtools.demo_link_graph import (
    ADDED_SHARE,
    _add_entry_links,
    _build_graph,
    _Host,
    _hosts,
    _Page,
    _page_counts,
    _plan_changes,
    _slug,
    _title,
)
from crawlcycle.devtools.demo_pages import _html, _sitemap
from crawlcycle.devtools.demo_query_log import _query_day, _query_pool
from crawlcycle.devtools.demo_vocabulary import HOST_QUALIFIERS, SECTIONS, TAIL_TOPICS, TOPICS

DAYS = 7  # days of the demo: WARCs and query-log partitions
_HTML = "text/html; charset=utf-8"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A valid 1x1 PNG, so that image bytes are real.
_PNG = (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + _png_chunk(b"IDAT", zlib.compress(b"\x00\x30\x80\x60")) + _png_chunk(b"IEND", b""))


@dataclass(frozen=True)
class DemoWeb:
    warc: Path  # the web of the first day
    seeds: Path
    query_log_dir: Path
    behaviour: Path
    days: tuple[tuple[date, Path], ...]  # the web of each day, the first day's included


def day_warc(out_dir: Path, day: date, start_date: str) -> Path:
    """The WARC of the demo web of ``day`` in ``out_dir``."""
    return out_dir / ("web.warc.gz" if day == date.fromisoformat(start_date) else f"web-{day.isoformat()}.warc.gz")


_Record = tuple[str, str, str, bytes, tuple[tuple[str, str], ...]]  # url, status, content type, body, more headers


class _Warc:
    """The WARC of one day. ``modified`` (URL -> (digest of the response, since when)), kept over the days in
    order, dates each response's Last-Modified: the first day of the run of days it has been the same."""

    def __init__(self, f: io.BufferedWriter, seed: int, when: datetime,
                 modified: dict[str, tuple[bytes, datetime]]) -> None:
        self.writer = WARCWriter(f, gzip=True)
        self.seed, self.when, self.modified = seed, when, modified
        self.warc_date = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.http_date = format_datetime(when, usegmt=True)

    def add(self, url: str, status: str, ctype: str, body: bytes,
            extra: tuple[tuple[str, str], ...] = ()) -> None:
        digest = hashlib.sha256(repr((status, ctype, extra)).encode() + body).digest()
        if self.modified.get(url, (None,))[0] != digest:
            self.modified[url] = (digest, self.when)
        since = self.modified[url][1]
        validators = (("Last-Modified", format_datetime(since, usegmt=True)),
                      ("ETag", f'"{int(since.timestamp()):x}-{len(body):x}"'))
        headers = [("Date", self.http_date), ("Server", "demo-web"), ("Content-Type", ctype),
                   ("Content-Length", str(len(body))), *validators, *extra]
        record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed} {self.warc_date} {url}")
        record = self.writer.create_warc_record(
            url, "response", payload=io.BytesIO(body),
            http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": self.warc_date,
                               "WARC-Record-ID": f"<urn:uuid:{record_id}>"})
        self.writer.write_record(record)


def _awkward_cases(rng: random.Random, web: list[_Host], pages_list: list[_Page],
                   robots_host: _Host) -> list[_Record]:
    """The records of non-HTML files and redirects (every day's), and links to them, to 404s and to a ``~`` URL
    added to pages not yet rendered. Files and redirects hang from pages that exist every day."""
    records: list[_Record] = []
    regular = [h for h in web if not h.tail]

    def stable(h: _Host) -> list[_Page]:
        return [p for p in h.pages[1:] if p.stable]

    for i, h in enumerate(regular[:3]):
        doc = rng.choice(stable(h))
        slug = _slug(doc.title)
        doc.links.append((f"/files/{slug}.pdf", f"{doc.title} (PDF)", None))
        doc.links.append((f"/files/{slug}.txt", f"{doc.title}, plain text notes", None))
        doc.extra_html.append(f'<p><img src="/images/{slug}.png" alt="{escape(doc.title)} diagram"> '
                              f'<a href="/images/{slug}.png">{escape(doc.title)} diagram</a></p>')
        pdf = (f"%PDF-1.4\n% {doc.title}\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>"
               "\n%%EOF\n").encode()
        records.append((f"http://{h.name}/files/{slug}.pdf", "200 OK", "application/pdf", pdf, ()))
        records.append((f"http://{h.name}/files/{slug}.txt", "200 OK", "text/plain; charset=utf-8",
                        f"{doc.title}\n\nNotes on {', '.join(h.words[i:i + 4])}.\n".encode(), ()))
        records.append((f"http://{h.name}/images/{slug}.png", "200 OK", "image/png", _PNG, ()))
    for h in regular[: max(3, len(pages_list) // 400)]:
        # An old address that moved permanently, still linked from some page.
        target = rng.choice(stable(h))
        old = f"http://{h.name}/archive/{_slug(target.title)}.html"
        records.append((old, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", target.url),)))
        rng.choice(stable(h)).links.append((old, target.title, None))
    chain_host, moved_to = regular[0], regular[1]
    final = rng.choice(stable(moved_to))
    first_hop = f"http://{chain_host.name}/old/{_slug(final.title)}.html"
    second_hop = f"http://{chain_host.name}/moved/{_slug(final.title)}.html"
    records.append((first_hop, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", second_hop),)))
    records.append((second_hop, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", final.url),)))
    chain_host.pages[0].links.append((first_hop, final.title, None))
    for h in regular[:4]:
        h.pages[0].links.append(("/latest.html", f"latest {h.topic} article", None))
    for p in rng.sample([p for p in pages_list if p.born >= 0], max(4, len(pages_list) // 60)):
        # A sequel that was never written: a plausible URL that answers 404.
        missing = _title(rng, p.host.words)[0] + " part 2"
        p.links.append((f"http://{p.host.name}/{rng.choice(SECTIONS)}/{_slug(missing)}.html", missing, None))
    editor = f"http://{robots_host.name}/~editor/profile.html"
    robots_host.pages[0].links.append(("/%7Eeditor/profile.html", "about the editor", None))
    robots_host.pages.append(_Page(-1, robots_host, editor, f"About the {robots_host.topic} editor", 0))
    return records


def _latest(h: _Host, day: int) -> _Record:
    """``/latest.html`` of ``h`` on ``day``: a redirect to its newest page of that day."""
    newest = max((p for p in h.pages if p.alive(day)), key=lambda p: p.born)
    return (f"http://{h.name}/latest.html", "302 Found", _HTML, b"<p>See the latest article.</p>",
            (("Location", newest.url),))


def _behaviour(web: list[_Host], n_seeds: int) -> dict[str, dict]:
    """A slow host, and hosts that answer conditional requests as some real servers do: not at all, from one
    Last-Modified for every file, or with no validators to answer from."""
    regular = [h for h in web if not h.tail]
    odd = regular[n_seeds + 3:] + regular[:n_seeds]
    behaviour: dict[str, dict] = {web[n_seeds].name: {"delay": 0.3}}
    for i, rule in enumerate(({"conditional": False}, {"validators": "fixed-date"}, {"validators": "none"})):
        behaviour.setdefault(odd[i % len(odd)].name, {}).update(rule)
    return behaviour


def generate(out_dir: Path, hosts: int = 24, pages: int = 2400, seed: int = 42, days: int = DAYS,
             start_date: str = "2026-11-01") -> DemoWeb:
    """Write the demo web (a WARC per day, seeds, behaviour, query log) into ``out_dir`` and return its paths."""
    most = len(TOPICS) * (len(HOST_QUALIFIERS) + 1) + len(TAIL_TOPICS)
    if not 6 <= hosts <= most:
        raise ValueError(f"demo web hosts must be between 6 and {most}, got {hosts}")
    if pages < 12 * hosts:
        raise ValueError(f"demo web needs at least 12 pages per host ({12 * hosts}), got {pages}")
    if days < 1:
        raise ValueError(f"demo web needs at least one day, got {days}")
    out_dir = Path(out_dir)
    first_day = date.fromisoformat(start_date)
    rng = random.Random(seed)
    n_tail = max(1, min(len(TAIL_TOPICS), hosts // 8))
    n_seeds = max(2, min(5, hosts // 5))
    web = _hosts(hosts, n_tail)
    robots_host, no_robots = web[n_seeds + 1], web[n_seeds + 2]
    added = round(ADDED_SHARE * pages)  # the first day has ``pages`` pages
    pages_list = _build_graph(rng, web, _page_counts(web, pages + added), robots_host)
    _plan_changes(random.Random(f"{seed}/changes"), pages_list, added)
    _add_entry_links(rng, web, n_seeds)
    awkward = _awkward_cases(rng, web, pages_list, robots_host)
    robots = {h.name: "User-agent: *\nDisallow:\n" for h in web if h is not no_robots}
    robots[robots_host.name] = "User-agent: *\nDisallow: /drafts/\nCrawl-delay: 0.2\n"
    # a tail host lists its pages in a sitemap, the rarely linked ones too
    robots[web[-1].name] = f"User-agent: *\nDisallow:\nSitemap: http://{web[-1].name}/sitemap.xml\n"

    out_dir.mkdir(parents=True, exist_ok=True)
    modified: dict[str, tuple[bytes, datetime]] = {}
    versions = []
    for day in range(days):
        when = datetime.combine(first_day + timedelta(days=day - 1), datetime.min.time(), UTC)
        path = day_warc(out_dir, first_day + timedelta(days=day), start_date)
        with path.open("wb") as f:
            warc = _Warc(f, seed, when, modified)
            for record in [*awkward, *(_latest(h, day) for h in [h for h in web if not h.tail][:4])]:
                warc.add(*record)
            for h in web:
                if h is web[-1]:
                    warc.add(f"http://{h.name}/sitemap.xml", "200 OK", "application/xml", _sitemap(h, day))
                if h.name in robots:
                    warc.add(f"http://{h.name}/robots.txt", "200 OK", "text/plain; charset=utf-8",
                             robots[h.name].encode())
                for p in h.pages:
                    if p.alive(day):
                        warc.add(p.url, "200 OK", _HTML, _html(p, seed, day))
        versions.append((first_day + timedelta(days=day), path))

    seeds_path = out_dir / "seeds.txt"
    seeds_path.write_text("".join(h.home + "\n" for h in web[:n_seeds]))
    behaviour_path = out_dir / "behaviour.json"
    behaviour_path.write_text(json.dumps(_behaviour(web, n_seeds), indent=1, sort_keys=True) + "\n")
    log_dir = out_dir / "query_log"
    ranked, reserve = _query_pool(rng, web, pages_list)
    for day in range(days):
        part = log_dir / f"dt={(first_day + timedelta(days=day)).isoformat()}"
        part.mkdir(parents=True, exist_ok=True)
        (part / "queries.tsv").write_text(_query_day(ranked, reserve, seed, day))
    return DemoWeb(versions[0][1], seeds_path, log_dir, behaviour_path, tuple(versions))
