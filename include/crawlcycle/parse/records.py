"""Parse stage: WARC response records to pages, out-links and rejected links (Parquet).

Per 2xx ``response`` record (robots.txt skipped; a URL met twice keeps its first record) one row in
``pages.parquet`` (names and schemas of the files written: ``shard_files.PARSE_OUTPUTS``), with the record's
validators (``ETag``, ``Last-Modified``), payload digest and date, which the stored page keeps for its next fetch. A
``revisit`` record is an answer that repeated a stored copy (``fetch.warc_output``): no page, the stored one stands
(its check in the update stage says so). ``reason`` names the first problem found, in this order:

- ``bad_url``: the record's URL does not pass canonicalization (row keeps the raw URL);
- ``empty_body``; ``not_html`` (content type, or sniffed when missing);
- ``malformed``: the HTML cannot be parsed or extracted at all;
- ``decode_error``: the declared charset (BOM, HTTP header or ``<meta>``) is unknown or wrong for the
  bytes; the text comes from the first charset that decodes (UTF-8, then windows-1252);
- ``truncated``: the body was cut (``WARC-Truncated``, the fetch log, or ``max_body_bytes`` here);
- ``noindex``: robots meta tag or ``X-Robots-Tag`` says noindex: text is not kept;
- ``no_text``: no main text found.

``canonical_link`` is the one URL the response names as its canonical: ``Link: <...>; rel="canonical"`` headers
(resolved against the URL, any content type) and ``<link rel=canonical href>`` in the document's head (resolved
against its base), canonicalized; null when it names none, or several different ones. ``date`` is the page's
date (publication, else last change; ``YYYY-MM-DD``): trafilatura's whole date search with the ``trafilatura``
extractor, else only what the document declares for machines (``<meta>`` date tags, JSON-LD), by htmldate's rules.

``content_hash`` is the SHA-1 of the main text (case-folded, whitespace collapsed), else of the body;
``simhash`` the SimHash of the main text. ``duplicate_of`` names the earliest page of the batch with the
same hash, else one whose SimHash is within 3 bits; pages naming another URL as their canonical come after the
others here, so that the page they name is the original. ``links.parquet`` holds distinct
(dst, anchor) pairs per page from ``<a href>`` and ``<area href>``, resolved against ``<base href>``, at
most ``max_outlinks_per_page``, self-links left out; ``anchor`` is the link text plus the alt text of its
images, ``context`` the anchor with up to ``CONTEXT_WORDS`` words of text on each side, ``nofollow`` from
``rel`` nofollow/ugc/sponsored. Exact duplicates and pages with robots nofollow emit no links (their
``n_links`` still counts them). Links that fail canonicalization go to ``rejects.parquet``.

Many records are parsed in a ``forkserver`` process pool, which imports the caller's ``__main__``
module: scripts calling ``parse_warcs`` need the ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import codecs
import datetime
import hashlib
import logging
import multiprocessing
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from urllib.parse import urlsplit

import lxml.html
import pyarrow as pa
import pyarrow.parquet as pq
from htmldate.core import examine_header
from htmldate.extractors import json_search
from htmldate.utils import Extractor as DateRules
from htmldate.validators import get_max_date, get_min_date
from lxml import etree
from lxml.etree import ParserError
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree
from trafilatura import bare_extraction
from trafilatura.metadata import examine_meta, extract_meta_json, extract_title
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import UrlRejected, UrlRules, canonicalize
from crawlcycle.contracts.errors import InputError
from crawlcycle.parse import parse_cache
from crawlcycle.parse.simhash import NearDuplicateIndex, simhash
from crawlcycle.settings import Settings

REASONS = ("bad_url", "empty_body", "not_html", "malformed", "decode_error", "truncated", "noindex", "no_text")

HTML_TYPES = ("text/html", "application/xhtml+xml")
_REFETCH = "a shard's WARC is written by its fetch task: run that task again"
IN_PROCESS_RECORDS = 32  # fewer records than this are parsed without a process pool
CHUNK_RECORDS = 8        # records per worker task: small, so one huge page holds up few others
CONTEXT_WORDS = 6        # words kept on each side of an anchor
MAX_ANCHOR_CHARS = 500
MAX_RAW_CHARS = 2000     # rejected hrefs are stored cut to this

# Extraction failures are recorded per page as reasons; the libraries' own log lines add nothing.
for _name in ("trafilatura", "htmldate"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

_HTML_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True)
# Every element as a plain HtmlElement, chosen in C: lxml.html's per-tag class lookup runs Python code each
# time an element is touched, about 7 % of extraction time; nothing here uses its form-element classes.
_HTML_PARSER.set_element_class_lookup(etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity))
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([a-zA-Z0-9_.:\-]+)", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# WHATWG encoding labels: these mean windows-1252 in a browser
_LATIN1_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii", "cp819"}
_SNIFF_HTML = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title")
_NOFOLLOW_RELS = {"nofollow", "ugc", "sponsored"}
_LANG = re.compile(r"[a-zA-Z]{2,3}(?=$|[-_])")
# One link-value of an HTTP Link header (RFC 8288): <target> and its parameters, quoted strings kept whole.
_LINK_VALUE = re.compile(r'<([^>]*)>((?:\s*;\s*[^\s;,=]+\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^\s;,"]*))?)*)')
_LINK_REL = re.compile(r';\s*rel\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;,"]*))', re.IGNORECASE)

# A record as passed to a worker: (url, status, content type header, X-Robots-Tag, Content-Language, Link (every
# Link header, joined by commas), body, truncated)
Record = tuple[str, int, str, str, str, str, bytes, bool]


class DamagedWarc(InputError):
    """A WARC file is cut short or damaged; the message is one line naming it."""


@dataclass(frozen=True)
class ParseResult:
    pages_path: Path
    links_path: Path
    rejects_path: Path
    pages: int
    links: int
    rejects: int
    skipped: int            # records not parsed: not a response, robots.txt, non-2xx, repeated URL
    reasons: dict[str, int]


def parse_warcs(warc_paths: list[Path], out_dir: Path, settings: Settings,
                fetch_log: Path | None = None) -> ParseResult:
    """Parse every 2xx response of ``warc_paths`` into the ``shard_files.PARSE_OUTPUTS`` files of ``out_dir``; with a
    ``fetch_log``, only the pages it fetched (not robots.txt, sitemaps or redirect hops)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    truncated: set[str] = set()
    pages_fetched: set[str] | None = None
    place: dict[str, int] = {}
    if fetch_log is not None and Path(fetch_log).exists():
        log = pq.read_table(fetch_log, columns=["final_url", "status", "truncated"]).to_pylist()
        truncated = {r["final_url"] for r in log if r["truncated"] and r["final_url"]}
        pages_fetched = {r["final_url"] for r in log if r["final_url"] and 200 <= (r["status"] or 0) < 300}
        place = {url: i for i, url in reversed(list(enumerate(r["final_url"] for r in log)))}
    skipped = Counter()
    facts: list[dict] = []  # of each record read, in order: what the page keeps of the record itself
    records = _read_records(warc_paths, settings.max_body_bytes, truncated, skipped, pages_fetched, facts)

    pages: list[dict] = []
    links: list[tuple] = []
    rejects: list[tuple] = []
    kept: list[tuple[dict, list, list]] = []
    seen_urls: set[str] = set()
    # _parse_all gives the results in record order, each after its record was read (its facts known)
    results = [(result[0] | facts[i], *result[1:]) for i, result in enumerate(_parse_all(records, settings))]
    # Pages in the fetch log's order (the batch's), not the WARC's, which follows the hosts' timing: which copy of a
    # page counts as the original and the order of the URLs discovered must not depend on it.
    for result in sorted(results, key=lambda r: place.get(r[0]["url"], len(place))):
        if result[0]["url"] in seen_urls:
            skipped["repeated"] += 1
            continue
        seen_urls.add(result[0]["url"])
        kept.append(result)
    # A page naming another URL as its canonical is, by its own account, not the primary copy (index.html naming /, a
    # print view naming its article): originals are chosen among the other pages first.
    copies = _mark_duplicates(sorted((page for page, _, _ in kept), key=_names_another_canonical))
    for page, page_links, page_rejects in kept:
        pages.append(page)
        if page["url"] not in copies:
            links.extend(page_links)
            rejects.extend(page_rejects)

    schemas = shard_files.PARSE_OUTPUTS
    tables = {shard_files.PAGES: pa.Table.from_pylist(pages, schemas[shard_files.PAGES]),
              shard_files.LINKS: _table(links, schemas[shard_files.LINKS]),
              shard_files.REJECTS: _table(rejects, schemas[shard_files.REJECTS])}
    for name, table in tables.items():
        shard_files.write_table(out_dir / name, table)
    reasons = Counter(p["reason"] for p in pages if p["reason"])
    return ParseResult(*(out_dir / name for name in tables), len(pages), len(links), len(rejects),
                       sum(skipped.values()), dict(reasons))


def _names_another_canonical(page: dict) -> bool:
    """Whether a page row names a URL other than its own as its canonical."""
    return page["canonical_link"] is not None and page["canonical_link"] != page["url"]


def _mark_duplicates(pages: Iterable[dict]) -> set[str]:
    """Set ``duplicate_of`` on each page repeating an earlier one of ``pages``: the same content hash, else a SimHash
    within 3 bits. Returns the URLs of the exact copies."""
    by_hash: dict[str, str] = {}
    near = NearDuplicateIndex()
    copies = set()
    for page in pages:
        digest, fingerprint = page["content_hash"], page["simhash"]
        if digest is None:
            continue
        if digest in by_hash:
            page["duplicate_of"] = by_hash[digest]
            copies.add(page["url"])
            continue
        by_hash[digest] = page["url"]
        if fingerprint is not None:
            page["duplicate_of"] = near.find(fingerprint)
            if page["duplicate_of"] is None:
                near.add(fingerprint, page["url"])
    return copies


def _read_records(warc_paths: list[Path], max_bytes: int, truncated: set[str], skipped: Counter,
                  pages_fetched: set[str] | None, facts: list[dict]) -> Iterator[Record]:
    """The 2xx page responses of the WARC files, each one's record facts appended to ``facts`` as it is read;
    DamagedWarc when one is cut short or damaged: a record that does not read whole or match its digest, or (with
    ``pages_fetched``) a fetched page without its response or revisit record."""
    seen: set[str] = set()
    for path in warc_paths:
        try:
            yield from _records(path, max_bytes, truncated, skipped, pages_fetched, seen, facts)
        except (ArchiveLoadFailed, EOFError, zlib.error, ValueError) as e:
            why = str(e).encode("ascii", "replace").decode().splitlines()[0][:60].strip() or type(e).__name__
            raise DamagedWarc(f"{path}: WARC file damaged after {len(seen)} pages ({why}); {_REFETCH}") from None
    missing = sorted((pages_fetched or set()) - seen)
    if missing:
        raise DamagedWarc(f"{', '.join(map(str, warc_paths))}: WARC file cut short: {len(missing)} pages the fetch "
                          f"log has are not in it (first: {missing[0]}); {_REFETCH}")


def _records(path: Path, max_bytes: int, truncated: set[str], skipped: Counter, pages_fetched: set[str] | None,
             seen: set[str], facts: list[dict]) -> Iterator[Record]:
    with open(path, "rb") as f:
        # the crawl's own WARCs (those with a fetch log) carry digests the fetcher wrote: check them
        for rec in ArchiveIterator(f, check_digests="raise" if pages_fetched is not None else False):
            url = rec.rec_headers.get_header("WARC-Target-URI") or ""
            if rec.rec_type == "revisit":  # the answer repeated the stored copy: nothing to parse
                if pages_fetched is not None and url in pages_fetched:
                    seen.add(url)
                skipped["revisit"] += 1
                continue
            status = _status(rec) if rec.rec_type == "response" and rec.http_headers else 0
            if not 200 <= status < 300 or urlsplit(url).path == "/robots.txt" or \
                    (pages_fetched is not None and url not in pages_fetched):
                skipped[rec.rec_type] += 1
                continue
            body = rec.content_stream().read(max_bytes + 1)  # bounded even for a compressed body
            seen.add(url)
            head = rec.http_headers
            facts.append({"etag": head.get_header("ETag"), "last_modified": head.get_header("Last-Modified"),
                          "payload_digest": rec.rec_headers.get_header("WARC-Payload-Digest"),
                          "fetched_at": _epoch(rec.rec_headers.get_header("WARC-Date"))})
            yield (url, status, head.get_header("Content-Type") or "", head.get_header("X-Robots-Tag") or "",
                   head.get_header("Content-Language") or "",
                   ", ".join(value for name, value in head.headers if name.lower() == "link"), body[:max_bytes],
                   len(body) > max_bytes or bool(rec.rec_headers.get_header("WARC-Truncated"))
                   or url in truncated)


def _epoch(warc_date: str | None) -> float | None:
    """A WARC-Date (ISO 8601, UTC) in seconds since the epoch."""
    try:
        return datetime.datetime.fromisoformat(warc_date).timestamp() if warc_date else None  # type: ignore[arg-type]
    except ValueError:
        return None


def _status(rec) -> int:
    try:
        return int(rec.http_headers.get_statuscode())
    except (TypeError, ValueError):
        return 0


def _parse_all(records: Iterator[Record], settings: Settings) -> Iterator[tuple[dict, list, list]]:
    """Parse results in record order: in-process for a few records, else in a process pool. With a parse
    cache, a record parsed before is read from it, and what is parsed now is added to it."""
    fingerprint = parse_cache.fingerprint(settings) if settings.parse_cache else None
    first = list(islice(records, IN_PROCESS_RECORDS))
    workers = min(settings.parse_workers or os.cpu_count() or 1, 64)
    if len(first) < IN_PROCESS_RECORDS or workers == 1:
        stream = chain(first, records)
        done: Iterator = (_parse_chunk(chunk, settings, fingerprint)
                          for chunk in iter(lambda: list(islice(stream, CHUNK_RECORDS)), []))
    else:
        done = _parse_in_pool(first, records, settings, workers, fingerprint)
    for results in done:
        new = [(key, result) for result, key in results if key is not None]
        if new:
            parse_cache.open_cache(settings.parse_cache).put(new)
        yield from (result for result, _ in results)


def _parse_in_pool(first: list[Record], records: Iterator[Record], settings: Settings, workers: int,
                   fingerprint: str | None) -> Iterator[list]:
    chunks = iter(lambda: list(islice(records, CHUNK_RECORDS)), [])
    head = [first[i:i + CHUNK_RECORDS] for i in range(0, len(first), CHUNK_RECORDS)]
    # forkserver: workers do not inherit the caller's threads and locks (Airflow runs tasks with threads)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["crawlcycle.parse.records"])
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        futures: list[Future] = []
        running: set[Future] = set()
        for chunk in (*head, *chunks):
            if len(running) >= 2 * workers:  # bounds the bodies in flight; a slow chunk blocks no other
                running = wait(running, return_when=FIRST_COMPLETED).not_done
            futures.append(pool.submit(_parse_chunk, chunk, settings, fingerprint))
            running.add(futures[-1])
        for future in futures:
            yield future.result()


def _parse_chunk(chunk: list[Record], settings: Settings, fingerprint: str | None) -> list[tuple[tuple, bytes | None]]:
    """(result, cache key to store it under, or None when it came from the cache or there is none) per record."""
    out = []
    for rec in chunk:
        if fingerprint is None:
            out.append((parse_record(*rec, settings), None))
            continue
        key = parse_cache.record_key(rec, fingerprint)
        cached = parse_cache.open_cache(settings.parse_cache).get(key)
        out.append((cached, None) if cached is not None else (parse_record(*rec, settings), key))
    return out


def parse_record(url: str, status: int, content_type: str, x_robots: str, content_language: str, link: str,
                 body: bytes, truncated: bool, settings: Settings) -> tuple[dict, list, list]:
    """One response to (page row, link rows, reject rows); every failure becomes a page reason."""
    mime, _, params = content_type.partition(";")
    mime = mime.strip().lower()
    page = dict.fromkeys(shard_files.schema(shard_files.PAGES).names) | {
        "url": url, "status": status, "content_type": mime or None, "n_links": 0, "noindex": False,
        "nofollow": False, "bytes": len(body)}
    blank = not body.strip()
    if not blank:
        page["content_hash"] = hashlib.sha1(body).hexdigest()
    try:
        page["url"] = canonicalize(url, None, settings.url_rules)
    except UrlRejected:
        return _done(page, {"bad_url"}), [], []
    # a Link header names the canonical of any response (a PDF's, say); an HTML page's head may name it too
    declared = _canonicals(_header_canonicals(link), url, settings.url_rules)
    page["canonical_link"] = _only(declared)
    if blank:
        return _done(page, {"empty_body"}), [], []
    if not (mime in HTML_TYPES or not mime and body[:256].lstrip().lower().startswith(_SNIFF_HTML)):
        return _done(page, {"not_html"}), [], []
    header_charset = next((p.split("=", 1)[1].strip(" \"'") for p in params.split(";")
                           if p.strip().lower().startswith("charset=")), None)
    html, charset_wrong = _decode(body, header_charset)
    if "\x00" in html:
        html = html.replace("\x00", "")
    try:
        tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", html, count=1), parser=_HTML_PARSER)
    except (ParserError, ValueError):
        return _done(page, {"malformed"}), [], []
    found = {"decode_error"} if charset_wrong else set()
    if truncated:
        found.add("truncated")

    # "googlebot: noindex" counts too: obeying another crawler's restriction is the safe side
    directives = {d.rpartition(":")[2].strip() for d in x_robots.lower().split(",")}
    page["noindex"] = bool(directives & {"noindex", "none"})
    page["nofollow"] = bool(directives & {"nofollow", "none"})

    _robots_meta(tree, page, settings.robots_token)
    page["lang"] = _language(tree, content_language)
    base = url
    for el in tree.iter("base"):
        if el.get("href"):
            try:
                base = canonicalize(el.get("href"), url, settings.url_rules)
            except UrlRejected:
                pass
            break
    # only the head's: a <link> in the body may come from what users posted, and search engines ignore it there
    head = tree.find("head")
    hrefs = [el.get("href") for el in (head.iter("link") if head is not None else ())
             if "canonical" in (el.get("rel") or "").lower().split() and el.get("href")]
    page["canonical_link"] = _only(declared | _canonicals(hrefs, base, settings.url_rules))
    links, rejects = _links(tree, page["url"], base, settings)
    page["n_links"] = len(links)
    if page["nofollow"]:
        links, rejects = [], []

    try:
        page["title"], page["description"], page["date"], main_text = _extract(tree, html, page["url"],
                                                                              settings.extractor)
    except Exception:  # a document that breaks the extractor is a page reason, not a crash
        main_text = None
        found.add("malformed")
    main = " ".join((main_text or "").split())
    if main:
        page["content_hash"] = hashlib.sha1(main.casefold().encode()).hexdigest()
        page["simhash"] = simhash(main)
        page["text"] = None if page["noindex"] else main_text
    if page["title"] is None:
        page["title"] = " ".join((tree.findtext(".//title") or "").split()) or None
    if page["noindex"]:
        found.add("noindex")
    elif page["text"] is None:
        found.add("no_text")
    return _done(page, found), links, rejects


def _extract(tree, html: str, url: str, extractor: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(title, description, date, main text) of a page, by the ``extractor`` setting."""
    if extractor == "trafilatura":
        doc = bare_extraction(tree, url=url, fast=True, with_metadata=True)
        return (doc.title, doc.description, doc.date, doc.text) if doc is not None else (None, None, None, None)
    # The fields of trafilatura's metadata pass that pages keep, by its own rules (meta tags, then JSON-LD,
    # then the title element and headings): the same values at a fraction of the pass's cost, most of which
    # is date and author detection.
    head = examine_meta(tree)
    try:
        head = extract_meta_json(tree, head)
    except Exception:  # broken JSON-LD: trafilatura ignores it too
        pass
    head.title = head.title or extract_title(tree)
    head.clean_and_trim()
    if extractor == "resiliparse":
        text = extract_plain_text(HTMLTree.parse(html), main_content=True, links=False, alt_texts=False,
                                  list_bullets=False, comments=False)
    else:
        doc = bare_extraction(tree, url=url, fast=True, include_comments=False)
        text = doc.text if doc is not None else None
    return head.title, head.description, _declared_date(tree), text


def _declared_date(tree) -> str | None:
    """The date a document declares for machines, by htmldate's rules with trafilatura's options (the publication
    date, else the last change): ``<meta>`` date tags, then JSON-LD. Dates in the text, ``<time>`` and ``<abbr>``
    elements are left out: a page holds many (comments, related articles, a "last updated" of the site)."""
    rules = DateRules(extensive=False, max=get_max_date(None), min=get_min_date(None), original=True,
                      format="%Y-%m-%d")
    return examine_header(tree, rules) or json_search(tree, rules)


def _header_canonicals(link: str) -> list[str]:
    """The targets of the ``rel="canonical"`` link-values of a Link header."""
    targets = []
    for value in _LINK_VALUE.finditer(link):
        rel = _LINK_REL.search(value.group(2))
        if rel and "canonical" in (rel.group(1) or rel.group(2) or "").lower().split():
            targets.append(value.group(1))
    return targets


def _canonicals(hrefs: list[str], base: str, rules: UrlRules) -> set[str]:
    """The canonical forms of ``hrefs`` resolved against ``base``; those the crawl refuses are left out."""
    found = set()
    for href in hrefs:
        try:
            found.add(canonicalize(href, base, rules))
        except UrlRejected:
            pass
    return found


def _only(urls: set[str]) -> str | None:
    """The URL, when there is exactly one: declarations that disagree declare nothing (as search engines read
    them)."""
    return next(iter(urls)) if len(urls) == 1 else None


def _done(page: dict, found: set[str]) -> dict:
    page["reason"] = next((r for r in REASONS if r in found), None)
    return page


def _decode(body: bytes, header_charset: str | None) -> tuple[str, bool]:
    """(text, whether a declared charset was unknown or wrong). Order: BOM, HTTP header, <meta>."""
    declared = []
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            body = body[len(bom):]
            declared.append(encoding)
            break
    if header_charset:
        declared.append(header_charset)
    meta = _META_CHARSET.search(body, 0, 4096)
    if meta:
        label = meta.group(1).decode("ascii").lower()
        declared.append("utf-8" if label.startswith(("utf-16", "utf-32")) else label)  # readable as ASCII
    wrong = False
    for label in declared:
        try:
            return body.decode(_codec(label)), wrong
        except (LookupError, UnicodeDecodeError):
            wrong = True
    for encoding in ("utf-8", "cp1252"):
        try:
            return body.decode(encoding), wrong
        except UnicodeDecodeError:
            pass
    return body.decode("utf-8", "replace"), True


def _codec(label: str) -> str:
    label = label.strip().lower()
    return "cp1252" if label in _LATIN1_LABELS else codecs.lookup(label).name


def _robots_meta(tree, page: dict, token: str) -> None:
    for el in tree.iter("meta"):
        if (el.get("name") or "").strip().lower() in ("robots", token):
            directives = {d.strip() for d in (el.get("content") or "").lower().split(",")}
            page["noindex"] |= bool(directives & {"noindex", "none"})
            page["nofollow"] |= bool(directives & {"nofollow", "none"})


def _language(tree, content_language: str) -> str | None:
    candidates = [tree.get("lang"), tree.get("xml:lang")]
    candidates += [el.get("content") for el in tree.iter("meta")
                   if (el.get("http-equiv") or "").lower() == "content-language"]
    for value in (*candidates, content_language):
        m = _LANG.match((value or "").strip().split(",")[0].strip())
        if m:
            return m.group().lower()
    return None


def _links(tree, src: str, base: str, settings: Settings) -> tuple[list[tuple], list[tuple]]:
    cap = settings.max_outlinks_per_page
    links: list[tuple] = []
    rejects: list[tuple] = []
    seen: set[tuple[str, str]] = set()
    for el in tree.iter("a", "area"):
        href = el.get("href")
        if href is None:
            continue
        if len(links) >= cap:  # spider-trap guard: the rest are refused, and recorded as such
            if len(rejects) < cap:
                rejects.append((src, href[:MAX_RAW_CHARS], "too_many_links"))
            continue
        try:
            dst = canonicalize(href, base, settings.url_rules)
        except UrlRejected as e:
            if len(rejects) < cap:
                rejects.append((src, href[:MAX_RAW_CHARS], e.reason))
            continue
        if dst == src:
            continue
        if el.tag == "area":
            anchor = " ".join((el.get("alt") or "").split())
        else:
            alts = [img.get("alt") or "" for img in el.iter("img")]
            anchor = " ".join(" ".join([el.text_content(), *alts]).split())
        anchor = anchor[:MAX_ANCHOR_CHARS]
        if (dst, anchor) in seen:
            continue
        seen.add((dst, anchor))
        prev = el.getprevious()
        parent = el.getparent()
        before = (prev.tail if prev is not None else parent.text if parent is not None else None) or ""
        context = " ".join([*before.split()[-CONTEXT_WORDS:], anchor, *(el.tail or "").split()[:CONTEXT_WORDS]])
        nofollow = bool(_NOFOLLOW_RELS & set((el.get("rel") or "").lower().split()))
        links.append((src, dst, anchor, " ".join(context.split()), nofollow))
    return links, rejects


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                schema=schema)
