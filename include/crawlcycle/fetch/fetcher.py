"""Fetch one shard of URLs politely and within hard bounds.

Hosts run concurrently (``fetch_concurrency`` worker threads, one host per worker, so one request in flight per
host); within a host, URLs go one after another with the delay of ``HostPoliteness``, over connections kept alive
per origin (``http_client``). Politeness is per host name, across its origins; robots.txt is per origin (RFC 9309:
scheme, host, port), fetched when the first URL of that origin comes up unless the stored copy is younger than
``robots_ttl``. When a host's batch URLs are done, its run reads the sitemaps named by the robots.txt files it
fetched (or ``/sitemap.xml`` when one names none, setting ``sitemap_fallback``), following sitemap indexes down
to ``sitemap_max_depth``, under the same politeness.

Origins to probe (never contacted, or due after a back-off) get their robots.txt fetched first, outside the batch,
under the same politeness. Every origin of the shard's hosts that was tried ends as one row of ``origin_tries``: it
answered, or the class of why not (robots.txt unreachable or 5xx, DNS, refused or reset connections, TLS, or
``host_error_limit`` failures in a row on its pages), from which update derives its back-off across cycles.

Output, in the shard folder (names and schemas in ``shard_files``), each file written whole and renamed into
place, but the journal:

- ``responses.warc.gz``: every request sent and response read (``warc_output``).
- ``fetch_log`` (rows and outcomes: ``fetch_log``), ``requests``, ``hosts``, ``robots``, ``sitemaps``,
  ``sitemap_urls``, ``origin_tries`` Parquet files.
- ``politeness.jsonl``: when each host may be asked next and each request, appended as each request starts and
  ends (``politeness.Journal``); a retried fetch reads it, waits out the delay after the last request of the
  attempt that died, and keeps that attempt's requests in ``requests`` (column ``attempt``).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import UrlRejected, canonicalize, host_of
from crawlcycle.fetch.fetch_log import finish, media_type, new_row, outcome_of
from crawlcycle.fetch.http_client import Client, Exchange, GetAddrInfo, Resolver
from crawlcycle.fetch.politeness import HostPoliteness, Journal, parse_retry_after
from crawlcycle.fetch.robots import RobotsRules, origin_of
from crawlcycle.fetch.sitemaps import read_sitemap
from crawlcycle.fetch.warc_output import WarcOutput, warc_output
from crawlcycle.settings import Settings

_REDIRECTS = (301, 302, 303, 307, 308)
_TRANSIENT = ("timeout", "connection", "dns", "tls")
_UNREACHABLE = ("dns", "ssrf_blocked")  # the host's address: no origin of the host can answer
_ROBOTS_REDIRECTS = 5  # RFC 9309: follow at least five


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
               journal_synced: Callable[[], None] | None = None, probes: list[str] | None = None) -> FetchResult:
    """Fetch ``urls`` (canonical, absolute; every URL of a host in this one call) into ``out_dir``, after the
    robots.txt of each origin in ``probes`` (``scheme://host[:port]``; every origin of a host in this one call).

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
            rows[url] = finish(new_row(url, host_of(url), error_class="bad_scheme"))
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
    try:
        with warc_output(warc_path, settings) as warc:
            shard = _Shard(settings, warc, Resolver(settings, getaddrinfo), journal)
            # Hosts with the most URLs start first: they bound the shard's finish time.
            runs = [_HostRun(shard, h, cached.get(h, {}), cached_robots.get(h, {}), not_before.get(h))
                    for h in sorted(by_host, key=lambda h: (-len(by_host[h]), h))]
            with ThreadPoolExecutor(max(1, min(settings.fetch_concurrency, len(runs))), "fetch") as pool:
                jobs = [pool.submit(run.crawl, by_host[run.host], probes_of.get(run.host, [])) for run in runs]
                shard.go.set()  # all workers exist: starting them is not slowed down by the first requests
                for job in jobs:
                    url_rows, run_outputs = job.result()
                    rows.update((r["url"], r) for r in url_rows)
                    for name, out in run_outputs.items():
                        outputs[name].extend(out)
    finally:
        journal.close()
    log_rows = [rows[u] for u in dict.fromkeys(urls)]
    requests = journal.earlier.requests + sorted(shard.requests, key=lambda r: (r["host"], r["started_at"]))
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


class _Shard:
    """What the host runs of one call share: settings, the resolver, the WARC writer, the journal and the
    requests list."""

    def __init__(self, settings: Settings, warc: WarcOutput, resolver: Resolver, journal: Journal) -> None:
        self.settings = settings
        self.allowed_nets = [ipaddress.ip_network(c, strict=False) for c in settings.allow_networks_list()]
        self.deadline = time.time() + settings.fetch_time_limit
        self.warc, self.resolver, self.journal = warc, resolver, journal
        self.lock = threading.Lock()
        self.go = threading.Event()
        self.requests: list[dict] = []

    def record(self, ex: Exchange) -> dict | None:
        """Log the exchange (WARC) and, if it reached the server, its request row; return the row."""
        row = None
        with self.lock:
            if ex.contacted:
                row = {"host": host_of(ex.url), "url": ex.url, "started_at": ex.started, "finished_at": ex.finished,
                       "status": ex.status, "error_class": ex.error, "new_connection": ex.new_connection,
                       "attempt": self.journal.attempt}
                self.requests.append(row)
            if ex.request:
                self.warc.write(ex)
        return row


@dataclass
class _Origin:
    """robots.txt of one origin as this run knows it, and the error class of its URLs when none may go."""

    row: dict                        # a row of shard_files.ROBOTS
    rules: RobotsRules | None = None
    fetched: bool = False            # robots.txt was fetched in this run (its sitemaps are read)
    stop: str | None = None

    def allowed(self, url: str) -> bool:
        return self.stop is None and self.rules is not None and self.rules.allowed(url)


@dataclass
class _Sitemaps:
    """What a run learned from sitemaps."""

    files: list[dict] = field(default_factory=list)   # rows of shard_files.SITEMAPS
    urls: list[dict] = field(default_factory=list)    # rows of shard_files.SITEMAP_URLS
    admitted: set[str] = field(default_factory=set)
    fetched: int = 0                                  # sitemap files fetched


class _HostRun:
    """Fetches the URLs of one host, one request at a time, politely; owns that host's state."""

    def __init__(self, shard: _Shard, host: str, cached: dict, robots: dict[str, dict],
                 not_before: float | None) -> None:
        self.shard, self.settings, self.host = shard, shard.settings, host
        self.client = Client(shard.settings, shard.resolver, shard.allowed_nets)
        self.pol = HostPoliteness(shard.settings)
        if cached.get("last_response_ms") is not None:  # kept when this call sends nothing
            self.pol.last_response = cached["last_response_ms"] / 1000.0
        self.last_request_at = cached.get("last_request_at")
        if self.last_request_at is not None and cached.get("delay") is not None:
            self.pol.not_before(self.last_request_at + cached["delay"])
        self.stop: str | None = None           # error class of every URL not fetched from here on
        self.errors = 0                         # consecutive errors in this call
        self.errors_before = self.carried_errors = cached.get("errors") or 0
        self.backoff_until = cached.get("backoff_until")
        if not_before is not None:
            if not_before > time.time() + self.settings.max_delay:  # a Retry-After back-off
                self.backoff_until = max(self.backoff_until or 0.0, not_before)
            else:
                self.pol.not_before(not_before)
        if self.backoff_until and self.backoff_until > time.time():
            self.stop = "retry_after"
        self.cached_robots = robots
        self.origins: dict[str, _Origin] = {}
        self.sitemaps = _Sitemaps()
        self.sitemap_queue: list[tuple[str, str]] = []  # (location as written, the URL it was found at)
        # per origin of this host: when its last request ended, and its failure class (None: it answered)
        self.last_try: dict[str, tuple[float, str | None]] = {}

    def crawl(self, urls: list[str], probes: list[str]) -> tuple[list[dict], dict[str, list[dict]]]:
        self.shard.go.wait()
        try:
            for origin in probes:
                if self.stop is None:
                    self._origin(origin, probe=True)
            rows = [self._visit(url) for url in urls]
            self._read_sitemaps()
        finally:
            self.client.close()
        last = self.pol.last_response
        host_row = {"host": self.host, "crawl_delay": self.pol.crawl_delay, "delay": self.pol.delay,
                    "last_response_ms": None if last is None else last * 1000.0,
                    "errors": self.carried_errors + self.errors, "errors_before": self.errors_before,
                    "backoff_until": self.backoff_until,
                    "last_request_at": self.pol.last_finished or self.last_request_at}
        batch_origins = {origin_of(url) for url in urls}
        return rows, {shard_files.HOSTS: [host_row],
                      shard_files.ROBOTS: [o.row for o in self.origins.values()],
                      shard_files.SITEMAPS: self.sitemaps.files, shard_files.SITEMAP_URLS: self.sitemaps.urls,
                      shard_files.ORIGIN_TRIES: self._origin_tries(batch_origins)}

    def _origin_tries(self, batch_origins: set[str]) -> list[dict]:
        """One row per origin of this host that was tried: whether it answered, or the class of why not. An origin
        did not answer when its robots.txt could not be read, when the host had no usable address, or when the run
        stopped after ``host_error_limit`` failures in a row and its last request was one of them."""
        out = []
        for origin, (tried_at, error) in sorted(self.last_try.items()):
            state = self.origins.get(origin)
            if state is not None and state.stop == "robots_unavailable":
                status = state.row["status"]
                error = "robots_server_error" if status is not None and status >= 500 else error
            elif not (self.stop in _UNREACHABLE or self.stop == "host_errors"):
                error = None
            out.append({"origin": origin, "host": self.host, "probe": origin not in batch_origins,
                        "tried_at": tried_at, "error_class": error})
        return out

    def _visit(self, url: str) -> dict:
        origin = self._origin(origin_of(url)) if self.stop is None else None
        stop = self.stop or (origin.stop if origin else None)
        if stop in _UNREACHABLE:  # no origin of the host can answer: this one did not either
            self.last_try.setdefault(origin_of(url), (time.time(), stop))
        if stop is not None:
            return finish(new_row(url, self.host, error_class=stop))
        if not origin.allowed(url):  # type: ignore[union-attr]
            return finish(new_row(url, self.host, error_class="robots_disallowed"))
        return self._fetch(url)

    def _allowed(self, url: str) -> bool:
        """Whether robots.txt of the URL's origin allows it (fetching that robots.txt if this run has not)."""
        return self._origin(origin_of(url)).allowed(url)

    def _request(self, url: str, max_bytes: int) -> Exchange | None:
        """One request at the first moment politeness allows; None (and stop) if past the time limit."""
        start = self.pol.next_allowed()
        if max(start, time.time()) >= self.shard.deadline:
            self.stop = "deferred"
            return None
        while (left := start - time.time()) > 0:
            time.sleep(left)
        # Journaled before it goes out too: a fetch killed in the middle of this request leaves its start.
        self.shard.journal.record(self.host, time.time() + self.pol.delay, sent={"url": url, "started_at": time.time()})
        ex = self.client.get(url, max_bytes, self.shard.deadline)
        request = self.shard.record(ex)
        if ex.contacted:
            self.pol.record(ex.started, ex.finished)
        if host_of(url) == self.host:  # a robots.txt redirected to another host is that host's origin
            failure = ex.error or ("server_error" if (ex.status or 0) >= 500 else None)
            self.last_try[origin_of(url)] = (ex.finished, failure)
        if ex.error in _TRANSIENT or (ex.status or 0) >= 500 or ex.status == 429:
            self.errors += 1
            if self.errors >= self.settings.host_error_limit:
                self.stop = "host_errors"
        elif ex.error is None:
            self.errors = self.carried_errors = 0
        if ex.status in (429, 503):
            wait = parse_retry_after(ex.headers.get("Retry-After"), time.time())
            if wait is not None and wait > self.settings.max_delay:
                self.stop, self.backoff_until = "retry_after", time.time() + wait
            elif wait is not None:
                self.pol.hold(wait)
        if ex.contacted:
            self.shard.journal.record(self.host, max(self.pol.next_allowed(), self.backoff_until or 0.0),
                                      request=request)
        return ex

    def _follow(self, url: str, max_bytes: int, hops: int, any_host: bool) -> Exchange | None:
        """GET ``url`` and follow its redirects, up to ``hops`` of them; to other hosts only with ``any_host``
        (else, and for targets robots.txt disallows, the redirect is the answer). None past the time limit."""
        for _ in range(hops + 1):
            ex = self._request(url, max_bytes)
            if ex is None or ex.error:
                return ex
            target, error = _redirect_target(ex, self.settings)
            if not target or error or (not any_host and (host_of(target) != self.host or not self._allowed(target))):
                return ex
            url = target
        return ex

    def _origin(self, origin: str, probe: bool = False) -> _Origin:
        """robots.txt of ``origin``: stored within robots_ttl (not for a ``probe``), else fetched now. A host-wide
        stop met while fetching it (time limit, SSRF guard, too many errors) leaves the origin unknown."""
        if origin in self.origins:
            return self.origins[origin]
        s = self.settings
        cached = self.cached_robots.get(origin, {})
        state = _Origin({"origin": origin, "host": self.host, "status": cached.get("status"),
                         "fetched_at": cached.get("fetched_at"), "robots_txt": cached.get("robots_txt")})
        row = state.row
        fresh = not probe and row["fetched_at"] is not None and time.time() - row["fetched_at"] < s.robots_ttl and \
            row["status"] is not None and row["status"] < 500
        if not fresh:
            fetched_at = time.time()
            status, text = self._fetch_robots(f"{origin}/robots.txt")
            if self.stop is not None:
                return _Origin(row, stop=self.stop)
            row.update(status=status, robots_txt=text, fetched_at=fetched_at)
            state.fetched = True
        state.rules = rules = RobotsRules(row["status"], row["robots_txt"], s.robots_token)
        row.update(crawl_delay=rules.crawl_delay, sitemaps=rules.sitemaps)
        delay = rules.crawl_delay if s.obey_crawl_delay else None
        if rules.disallow_all:
            state.stop = "robots_unavailable"
        elif delay is not None and delay > s.max_delay:
            state.stop = "crawl_delay"  # deferred rather than crawled faster than it asks
        elif delay is not None:
            self.pol.crawl_delay = max(self.pol.crawl_delay or 0.0, delay)  # the host's slowest origin sets the pace
        if state.fetched and state.stop is None:
            listed = rules.sitemaps or (["/sitemap.xml"] if s.sitemap_fallback else [])
            self.sitemap_queue += [(loc, f"{origin}/robots.txt") for loc in listed]
        self.origins[origin] = state
        return state

    def _fetch_robots(self, url: str) -> tuple[int | None, str | None]:
        ex = self._follow(url, self.settings.robots_max_bytes, _ROBOTS_REDIRECTS, any_host=True)
        if ex is None:
            return None, None
        if ex.error in ("ssrf_blocked", "dns") and host_of(ex.url) == self.host:
            self.stop = ex.error  # the host's address: nothing of any of its origins goes
        if ex.error:
            return None, None
        if not 200 <= ex.status < 300:  # type: ignore[operator]  # 3xx left over reads like no robots.txt
            return ex.status, None
        text = ex.body.decode("utf-8", "replace")
        # A cut-off last line could be a shortened (stricter or looser) rule: drop it.
        return ex.status, text.rpartition("\n")[0] if ex.truncated else text

    def _fetch(self, url: str) -> dict:
        """Fetch ``url``, following same-host redirects in line (each hop waits its turn)."""
        row = new_row(url, self.host)
        current, seen, first_status = url, {url}, None
        while True:
            ex = self._request(current, self.settings.max_body_bytes)
            if ex is None:
                row["error_class"] = "deferred"
                break
            if ex.contacted:
                row["started_at"] = row["started_at"] or ex.started
                row["finished_at"] = ex.finished
            if ex.error:
                row["error_class"] = ex.error
                break
            row["status"] = ex.status
            first_status = first_status or ex.status
            target, error = _redirect_target(ex, self.settings)
            if target is None and error is None:
                row.update(final_url=current, bytes=len(ex.body), truncated=ex.truncated,
                           content_type=media_type(ex.headers.get("Content-Type")),
                           error_class="too_large" if ex.truncated else None)
                if ex.status >= 300:  # type: ignore[operator]
                    row["error_class"] = "http_error"
                break
            if target:
                row["redirects"].append(target)
            if error:
                row["error_class"] = error
                break
            row["final_url"] = target
            if target in seen:
                row["error_class"] = "redirect_loop"
                break
            if host_of(target) != self.host or not self._allowed(target):
                # Not followed now: the cycle admits the target to the frontier.
                if self.client.target_blocked(target):
                    row["error_class"] = "ssrf_blocked"
                break
            if len(row["redirects"]) > self.settings.max_redirects:
                row["error_class"] = "too_many_redirects"
                break
            seen.add(target)
            current = target
        row = finish(row)
        if row["outcome"] == "fetched" and row["redirects"]:
            # The content lives at the target, a URL of its own; this URL's state is its redirect.
            row["outcome"] = outcome_of(first_status, None)
        return row

    def _read_sitemaps(self) -> None:
        """Read the queued sitemaps of this host, indexes first-come, within the limits of the settings."""
        s, found = self.settings, self.sitemaps
        queue = deque((loc, base, 0) for loc, base in self.sitemap_queue)
        seen: set[str] = set()
        while queue:
            loc, base, depth = queue.popleft()
            try:
                url, reason = canonicalize(loc, base, s.url_rules, binary_ok=True), None
            except UrlRejected as e:
                url, reason = loc, e.reason
            if url in seen:
                continue
            seen.add(url)
            record = {"url": url, "host": self.host, "depth": depth, "status": None, "kind": None, "entries": 0,
                      "admitted": 0, "reason": reason or self._sitemap_skipped(url, depth)}
            found.files.append(record)
            if record["reason"]:
                continue
            found.fetched += 1
            ex = self._follow(url, s.sitemap_max_bytes, s.max_redirects, any_host=False)
            if ex is None or ex.error or not 200 <= (ex.status or 0) < 300:
                record.update(status=ex and ex.status, reason="deferred" if ex is None else ex.error or "http_error")
                continue
            sitemap = read_sitemap(ex.body, s.sitemap_max_bytes, ex.truncated)
            record.update(status=ex.status, kind=sitemap.kind, entries=len(sitemap.locs), reason=sitemap.reason)
            for loc in sitemap.locs:
                if sitemap.kind == "sitemapindex":
                    queue.append((loc, url, depth + 1))
                    continue
                try:
                    target = canonicalize(loc, url, s.url_rules)
                except UrlRejected as e:
                    found.urls.append({"sitemap": url, "url": loc, "reason": e.reason})
                    continue
                if host_of(target) != self.host:  # a sitemap speaks for its own host only
                    found.urls.append({"sitemap": url, "url": loc, "reason": "sitemap_off_host"})
                elif len(found.admitted) >= s.max_urls_per_host:
                    record["reason"] = record["reason"] or "url_cap"
                elif target not in found.admitted:
                    found.admitted.add(target)
                    found.urls.append({"sitemap": url, "url": target, "reason": None})
                    record["admitted"] += 1

    def _sitemap_skipped(self, url: str, depth: int) -> str | None:
        """Why the sitemap at ``url`` is not fetched, or None to fetch it."""
        if depth > self.settings.sitemap_max_depth:
            return "depth_limit"
        if host_of(url) != self.host:
            return "off_host"  # fetched by the run of its own host, when its robots.txt names it
        if self.stop is not None:
            return self.stop
        if self.sitemaps.fetched >= self.settings.sitemap_max_files:
            return "file_limit"
        return None if self._allowed(url) else "robots_disallowed"


def _redirect_target(ex: Exchange, settings: Settings) -> tuple[str | None, str | None]:
    """(canonical target, None) of a redirect, (raw target, error class) of a bad one, (None, None) if
    the response is not a redirect."""
    if ex.status not in _REDIRECTS:
        return None, None
    location = (ex.headers.get("Location") or "").strip()
    if not location:
        return "", "bad_redirect"
    try:
        return canonicalize(location, ex.url, settings.url_rules), None
    except UrlRejected as e:
        return location, "bad_scheme" if e.reason == "bad_scheme" else "bad_redirect"
