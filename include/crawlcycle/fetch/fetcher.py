"""Fetch one shard of URLs politely and within hard bounds.

Hosts run concurrently (``fetch_concurrency`` worker threads, one host per worker, so one request in flight per
host); each host's run (``host_loop``) asks the robots.txt of its origins to probe, then its URLs one after another
with the delay of ``HostPoliteness``, over connections kept alive per origin (``http_client``), then the sitemaps its
robots.txt files name. Politeness is per host name, across its origins; robots.txt is per origin (RFC 9309: scheme,
host, port; ``robots_gate``).

Origins to probe (never contacted, or due after a back-off) get their robots.txt fetched first, outside the batch,
under the same politeness. Every origin of the shard's hosts that was tried ends as one row of ``origin_tries``: it
answered, or the class of why not (robots.txt unreachable or 5xx, DNS, refused or reset connections, TLS, or
``host_error_limit`` failures in a row on its pages), from which update derives its back-off across cycles.

Output, in the shard folder (names and schemas in ``shard_files``), each file written whole and renamed into
place, but the journal:

- ``responses.warc.gz``: every request sent and response read (``warc_output``), a revisit record for an answer
  that repeats a stored copy.
- ``fetch_log`` (rows and outcomes: ``fetch_log``), ``requests``, ``hosts``, ``robots``, ``sitemaps``,
  ``sitemap_urls``, ``origin_tries`` Parquet files.
- ``politeness.jsonl``: when each host may be asked next and each request, appended as each request starts and
  ends (``politeness.Journal``); a retried fetch reads it, waits out the delay after the last request of the
  attempt that died, and keeps that attempt's requests in ``requests`` (column ``attempt``).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import host_of
from crawlcycle.contracts.fetch_errors import ErrorClass
from crawlcycle.fetch.exchange import Recorder
from crawlcycle.fetch.fetch_log import finish, new_row
from crawlcycle.fetch.host_loop import HostLoop
from crawlcycle.fetch.http_client import Client, GetAddrInfo, Resolver, StoredCopy, allowed_networks
from crawlcycle.fetch.politeness import Journal
from crawlcycle.fetch.warc_output import warc_output
from crawlcycle.settings import Settings


@dataclass(frozen=True)
class FetchResult:
    warc: Path
    fetch_log: Path
    requests: Path
    hosts: Path
    urls: int
    requests_sent: int
    connections: int  # connections opened (the rest of the requests reused one)
    outcomes: dict[str, int]


def fetch_urls(urls: list[str], settings: Settings, out_dir: Path, hosts: list[dict] | None = None,
               robots: list[dict] | None = None, getaddrinfo: GetAddrInfo = socket.getaddrinfo,
               journal_synced: Callable[[], None] | None = None, probes: list[str] | None = None,
               copies: dict[str, StoredCopy] | None = None) -> FetchResult:
    """Fetch ``urls`` (canonical, absolute; every URL of a host in this one call) into ``out_dir``, after the
    robots.txt of each origin in ``probes`` (``scheme://host[:port]``; every origin of a host in this one call).
    ``copies`` holds the stored copies of the URLs that are pages fetched again (refreshes): their requests are
    conditional, and an answer that repeats the stored copy is a WARC revisit record (``warc_output``).

    ``hosts`` and ``robots`` are the stored rows of the ``hosts`` and ``robots`` tables: a robots.txt younger than
    ``robots_ttl`` is not fetched again, a Retry-After back-off still running defers the host, and the first
    request to a host waits the delay after its last one. ``journal_synced`` runs as the politeness journal grows
    (to copy it to shared shard storage).
    """
    settings.require_user_agent()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cached = {h["host"]: h for h in hosts or []}
    cached_robots: dict[str, dict[str, dict]] = {}
    for r in robots or []:
        cached_robots.setdefault(r["host"], {})[r["origin"]] = r
    rows: dict[str, dict] = {}
    by_host: dict[str, list[str]] = {}
    for url in dict.fromkeys(urls):
        host = _fetchable_host(url)
        if host:
            by_host.setdefault(host, []).append(url)
        else:
            rows[url] = finish(new_row(url, host_of(url), error_class=ErrorClass.BAD_SCHEME))
    probes_of: dict[str, list[str]] = {}
    for origin in dict.fromkeys(probes or []):
        host = _fetchable_host(origin)
        if host:
            probes_of.setdefault(host, []).append(origin)
            by_host.setdefault(host, [])
    warc_path = out_dir / shard_files.WARC
    outputs: dict[str, list[dict]] = {shard_files.HOSTS: [], shard_files.ROBOTS: [], shard_files.SITEMAPS: [],
                                      shard_files.SITEMAP_URLS: [], shard_files.ORIGIN_TRIES: []}
    journal = Journal(out_dir / shard_files.POLITENESS_JOURNAL, journal_synced)
    not_before = journal.earlier.not_before  # an earlier attempt of this fetch (killed, or a replay)
    go = threading.Event()

    def run(loop: HostLoop) -> tuple[list[dict], dict[str, list[dict]]]:
        go.wait()  # all workers exist: starting them is not slowed down by the first requests
        return loop.run(by_host[loop.host], probes_of.get(loop.host, []), copies)

    try:
        with warc_output(warc_path, settings) as warc:
            recorder = Recorder(warc, journal)
            resolver = Resolver(settings, getaddrinfo)
            allowed = allowed_networks(settings)
            deadline = time.time() + settings.fetch_time_limit
            # Hosts with the most URLs start first: they bound the shard's finish time.
            loops = [HostLoop(h, settings, Client(settings, resolver, allowed), recorder, deadline, cached.get(h, {}),
                              cached_robots.get(h, {}), not_before.get(h))
                     for h in sorted(by_host, key=lambda h: (-len(by_host[h]), h))]
            with ThreadPoolExecutor(max(1, min(settings.fetch_concurrency, len(loops))), "fetch") as pool:
                jobs = [pool.submit(run, loop) for loop in loops]
                go.set()
                for job in jobs:
                    url_rows, run_outputs = job.result()
                    rows.update((r["url"], r) for r in url_rows)
                    for name, out in run_outputs.items():
                        outputs[name].extend(out)
    finally:
        journal.close()
    log_rows = [rows[u] for u in dict.fromkeys(urls)]
    requests = journal.earlier.requests + sorted(recorder.requests, key=lambda r: (r["host"], r["started_at"]))
    paths = {name: shard_files.write_rows(out_dir, name, out) for name, out in
             [(shard_files.FETCH_LOG, log_rows), (shard_files.REQUESTS, requests), *outputs.items()]}
    outcomes: dict[str, int] = {}
    for r in log_rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return FetchResult(warc_path, paths[shard_files.FETCH_LOG], paths[shard_files.REQUESTS],
                       paths[shard_files.HOSTS], len(log_rows), len(requests),
                       sum(bool(r["new_connection"]) for r in requests), outcomes)


def _fetchable_host(url: str) -> str | None:
    """The host (as ``host_of`` gives it) of an http(s) URL with a valid authority, else None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    return parts.hostname if parts.scheme in ("http", "https") and parts.hostname else None
