"""Parse stage: WARC response records to pages, out-links and rejected links (Parquet): reading the WARC files,
the process pool that parses their records (one response: ``html_page``) and the duplicates among the pages.

Per 2xx ``response`` record (robots.txt skipped; a URL met twice keeps its first record) one row in
``pages.parquet`` (names and schemas of the files written: ``shard_files.PARSE_OUTPUTS``), with the record's
validators (``ETag``, ``Last-Modified``), payload digest and date, which the stored page keeps for its next fetch. A
``revisit`` record is an answer that repeated a stored copy (``fetch.warc_output``): no page, the stored one stands
(its check in the update stage says so). The row's other columns, its ``reason`` and the page's links are
``html_page``'s.

``duplicate_of`` names the earliest page of the batch with the same hash, else one whose SimHash is within 3 bits;
pages naming another URL as their canonical come after the others here, so that the page they name is the
original. Exact duplicates emit no links (their ``n_links`` still counts them).

Many records are parsed in a ``forkserver`` process pool, which imports the caller's ``__main__``
module: scripts calling ``parse_warcs`` need the ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import datetime
import multiprocessing
import os
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.errors import InputError
from crawlcycle.parse import parse_cache
from crawlcycle.parse.html_page import parse_record
from crawlcycle.parse.simhash import NearDuplicateIndex
from crawlcycle.settings import Settings

_REFETCH = "a shard's WARC is written by its fetch task: run that task again"
IN_PROCESS_RECORDS = 32  # fewer records than this are parsed without a process pool
CHUNK_RECORDS = 8        # records per worker task: small, so one huge page holds up few others

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
    ctx.set_forkserver_preload(["crawlcycle.parse.warc_records"])
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


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                schema=schema)
