"""Fetch one shard of URLs politely and within hard bounds.

Hosts run concurrently (``fetch_concurrency`` worker threads, one host per worker, so one request in
flight per host); within a host, URLs go one after another with the delay of ``HostPoliteness``.
Output, each file written to a temporary name and then renamed into place:

- ``responses.warc.gz``: a request record for every request sent and a response record for every
  response read (robots.txt included). Bodies are stored decoded (no transfer or content coding), the
  original ``Content-Encoding``/``Transfer-Encoding``/``Content-Length`` headers renamed ``X-Crawler-*``;
  a body cut at ``max_body_bytes`` carries ``WARC-Truncated: length``.
- ``fetch_log.parquet``: one row per input URL (``FETCH_LOG_SCHEMA``); ``outcome`` is the URL's new state.
- ``requests.parquet``: one row per connection attempt (``REQUESTS_SCHEMA``), for the per-host gap check:
  next ``started_at`` minus previous ``finished_at`` of one host is at least the delay in force.
- ``hosts.parquet``: robots and politeness state per host (``HOSTS_SCHEMA``), fed back as ``hosts``.
"""

from __future__ import annotations

import functools
import http.client
import io
import ipaddress
import os
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from urllib.parse import quote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlcycle.canonical import UrlRejected, canonicalize, host_of
from crawlcycle.politeness import HostPoliteness, parse_retry_after
from crawlcycle.robots import RobotsRules, robots_url
from crawlcycle.settings import Settings

OUTCOMES = ("fetched", "redirected_permanent", "redirected_temporary", "gone", "retry_pending", "deferred",
            "disallowed")
# Error classes that decide the outcome on their own; ``http_error`` (4xx/5xx) and ``too_large`` (body
# truncated, still fetched) leave it to the status.
_ERROR_OUTCOME = {
    "timeout": "retry_pending", "dns": "retry_pending", "connection": "retry_pending",
    "robots_disallowed": "disallowed",
    "deferred": "deferred",            # fetch_time_limit reached first
    "retry_after": "deferred",         # host backed off by Retry-After beyond max_delay
    "crawl_delay": "deferred",         # host asks for a Crawl-delay beyond max_delay
    "host_errors": "deferred",         # host_error_limit consecutive errors
    # robots.txt 5xx or unreachable: nothing allowed this cycle, retried with back-off like a failure
    "robots_unavailable": "retry_pending",
    "ssrf_blocked": "gone", "bad_scheme": "gone", "bad_redirect": "gone", "redirect_loop": "gone",
    "too_many_redirects": "gone", "bad_encoding": "gone",
}
ERROR_CLASSES = (*_ERROR_OUTCOME, "http_error", "too_large")
_REDIRECTS = (301, 302, 303, 307, 308)
_TRANSIENT = ("timeout", "connection", "dns")
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+_-]*/[a-z0-9][a-z0-9.+_-]*")
_CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

FETCH_LOG_SCHEMA = pa.schema([
    ("url", pa.string()), ("host", pa.string()), ("final_url", pa.string()), ("status", pa.int32()),
    ("redirects", pa.list_(pa.string())), ("bytes", pa.int64()), ("content_type", pa.string()),
    ("started_at", pa.float64()), ("finished_at", pa.float64()), ("elapsed_ms", pa.float64()),
    ("error_class", pa.string()), ("truncated", pa.bool_()), ("outcome", pa.string())])
REQUESTS_SCHEMA = pa.schema([
    ("host", pa.string()), ("url", pa.string()), ("started_at", pa.float64()), ("finished_at", pa.float64()),
    ("status", pa.int32()), ("error_class", pa.string())])
HOSTS_SCHEMA = pa.schema([
    ("host", pa.string()), ("robots_status", pa.int32()), ("robots_fetched_at", pa.float64()),
    ("robots_txt", pa.string()), ("crawl_delay", pa.float64()), ("sitemaps", pa.list_(pa.string())),
    ("delay", pa.float64()), ("last_response_ms", pa.float64()), ("errors", pa.int32()),
    ("backoff_until", pa.float64())])


@dataclass(frozen=True)
class FetchResult:
    warc: Path
    fetch_log: Path
    requests: Path
    hosts: Path
    urls: int
    requests_sent: int
    outcomes: dict[str, int]


def outcome_of(status: int | None, error_class: str | None) -> str:
    """The URL state after a fetch that ended with ``status`` and ``error_class``."""
    if error_class in _ERROR_OUTCOME:
        return _ERROR_OUTCOME[error_class]
    if status is None or 200 <= status < 300:
        return "fetched"
    if status in (301, 308):
        return "redirected_permanent"
    if status in (302, 303, 307):
        return "redirected_temporary"
    return "retry_pending" if status == 429 or status >= 500 else "gone"


def media_type(value: str | None) -> str | None:
    """``type/subtype`` of a Content-Type header, lower-case; None if absent or malformed."""
    mt = (value or "").split(";", 1)[0].strip().lower()
    return mt if _MEDIA_TYPE.fullmatch(mt) else None


def fetch_urls(urls: list[str], settings: Settings, out_dir: Path,
               hosts: list[dict] | None = None) -> FetchResult:
    """Fetch ``urls`` (canonical, absolute; every URL of a host in this one call) into ``out_dir``.

    ``hosts`` are the stored hosts rows: a robots.txt younger than ``robots_ttl`` is not fetched again
    and a Retry-After back-off still running defers the host.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cached = {h["host"]: h for h in hosts or []}
    rows: dict[str, dict] = {}
    by_host: dict[str, list[str]] = {}
    for url in dict.fromkeys(urls):
        host = _fetchable_host(url)
        if host:
            by_host.setdefault(host, []).append(url)
        else:
            rows[url] = _finish(_row(url, host_of(url), error_class="bad_scheme"))
    warc_path = out_dir / "responses.warc.gz"
    host_rows = []
    with _replacing(warc_path) as tmp, open(tmp, "wb") as warc_file:
        shard = _Shard(settings, WARCWriter(warc_file, gzip=True))
        # Hosts with the most URLs start first: they bound the shard's finish time.
        runs = [_HostRun(shard, h, cached.get(h, {})) for h in sorted(by_host, key=lambda h: (-len(by_host[h]), h))]
        with ThreadPoolExecutor(max(1, min(settings.fetch_concurrency, len(runs))), "fetch") as pool:
            jobs = [pool.submit(run.crawl, by_host[run.host]) for run in runs]
            shard.go.set()  # all workers exist: starting them is not slowed down by the first requests
            for job in jobs:
                url_rows, host_row = job.result()
                rows.update((r["url"], r) for r in url_rows)
                host_rows.append(host_row)
    log_rows = [rows[u] for u in dict.fromkeys(urls)]
    paths = {name: out_dir / f"{name}.parquet" for name in ("fetch_log", "requests", "hosts")}
    _write_parquet(paths["fetch_log"], log_rows, FETCH_LOG_SCHEMA)
    _write_parquet(paths["requests"], sorted(shard.requests, key=lambda r: (r["host"], r["started_at"])),
                   REQUESTS_SCHEMA)
    _write_parquet(paths["hosts"], sorted(host_rows, key=lambda r: r["host"]), HOSTS_SCHEMA)
    outcomes: dict[str, int] = {}
    for r in log_rows:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    return FetchResult(warc_path, paths["fetch_log"], paths["requests"], paths["hosts"], len(log_rows),
                       len(shard.requests), outcomes)


def _fetchable_host(url: str) -> str | None:
    """The host (as ``host_of`` gives it) of an http(s) URL with a valid authority, else None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    return parts.hostname if parts.scheme in ("http", "https") and parts.hostname else None


def _row(url: str, host: str, **values: object) -> dict:
    row = {"url": url, "host": host, "final_url": None, "status": None, "redirects": [], "bytes": 0,
           "content_type": None, "started_at": None, "finished_at": None, "elapsed_ms": None,
           "error_class": None, "truncated": False, "outcome": None}
    row.update(values)
    return row


def _finish(row: dict) -> dict:
    if row["started_at"] is not None:
        row["elapsed_ms"] = (row["finished_at"] - row["started_at"]) * 1000.0
    row["outcome"] = outcome_of(row["status"], row["error_class"])
    return row


@contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it on success and removed on failure."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_parquet(path: Path, rows: list[dict], schema: pa.Schema) -> None:
    with _replacing(path) as tmp:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)


# --- one HTTP exchange -------------------------------------------------------------------------------

@dataclass
class _Exchange:
    url: str
    started: float
    finished: float = 0.0
    contacted: bool = False          # a connection was attempted (counts for politeness)
    ip: str | None = None
    request: StatusAndHeaders | None = None   # request line and headers, once sent
    status: int | None = None
    headers: Message = field(default_factory=Message)
    head: StatusAndHeaders | None = None      # response head as stored, once the body is read
    body: bytes = b""
    truncated: bool = False
    error: str | None = None


class _DeadlineReader(io.RawIOBase):
    """Socket reads bounded by ``read_timeout`` each and by one deadline for the whole response, so a
    server trickling bytes cannot hold a worker; given to ``http.client.HTTPResponse`` as its socket."""

    def __init__(self, sock: socket.socket, read_timeout: float, deadline: float) -> None:
        self.sock, self.read_timeout, self.deadline = sock, read_timeout, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        left = self.deadline - time.time()
        if left <= 0:
            raise TimeoutError("response deadline passed")
        self.sock.settimeout(min(self.read_timeout, left))
        return self.sock.recv_into(buf)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)


@functools.cache
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def _resolve(host: str, port: int) -> tuple[str, int]:
    """The first DNS answer for ``host``, IPv4 first."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return infos[0][4][0], port


def _blocked(ip: str, allowed: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    """SSRF guard: only globally routable unicast addresses, unless inside ``allow_networks``."""
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    if any(addr in net for net in allowed):
        return False
    return not addr.is_global or addr.is_multicast


def _request_head(url: str, settings: Settings) -> StatusAndHeaders:
    parts = urlsplit(url)
    target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~") + (f"?{parts.query}" if parts.query else "")
    return StatusAndHeaders(f"GET {target} HTTP/1.1", [
        ("Host", parts.netloc.rpartition("@")[2]), ("User-Agent", settings.user_agent),
        ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"), ("Accept-Encoding", "gzip, deflate"),
        ("Connection", "close")], is_http_request=True)


def _read_body(resp: http.client.HTTPResponse, max_bytes: int) -> tuple[bytes, bool, bool]:
    """(body decoded, truncated, decoded from a content coding); never holds more than max_bytes + 64 KiB.

    Decompression is incremental with an output cap, so a gzip bomb stops at the size limit."""
    coding = (resp.getheader("Content-Encoding") or "").strip().lower()
    decoder = zlib.decompressobj(_CODINGS[coding]) if coding in _CODINGS else None
    out = bytearray()
    wire = 0
    while chunk := resp.read1(65536):
        wire += len(chunk)
        out += decoder.decompress(chunk, max_bytes - len(out) + 1) if decoder else chunk
        if len(out) > max_bytes or wire > max_bytes:
            return bytes(out[:max_bytes]), True, decoder is not None
    if resp.length:  # the connection closed before Content-Length bytes came
        raise http.client.IncompleteRead(bytes(out), resp.length)
    return bytes(out), False, decoder is not None


def _stored_head(resp: http.client.HTTPResponse, length: int, decoded: bool) -> StatusAndHeaders:
    """Response head matching the stored (decoded, maybe truncated) body."""
    headers = []
    for name, value in resp.msg.items():
        if name.lower() in ("transfer-encoding", "content-length") or \
                (decoded and name.lower() == "content-encoding"):
            name = f"X-Crawler-{name}"
        headers.append((name, value))
    headers.append(("Content-Length", str(length)))
    return StatusAndHeaders(f"{resp.status} {resp.reason}", headers,
                            protocol="HTTP/1.0" if resp.version == 10 else "HTTP/1.1")


# --- one shard, one host -----------------------------------------------------------------------------

def _warc_date(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class _Shard:
    """What the host workers of one call share: settings, the WARC writer and the requests list."""

    def __init__(self, settings: Settings, warc: WARCWriter) -> None:
        self.settings = settings
        self.allowed_nets = [ipaddress.ip_network(c, strict=False) for c in settings.allow_networks_list()]
        self.deadline = time.time() + settings.fetch_time_limit
        self.warc = warc
        self.lock = threading.Lock()
        self.go = threading.Event()
        self.requests: list[dict] = []
        self.targets: dict[str, tuple[str, int] | None] = {}  # connect_to answers, per host

    def address(self, host: str, port: int) -> tuple[str, int]:
        """Where to connect for ``host``: its connect_to target, else the first DNS answer."""
        if host not in self.targets:
            self.targets[host] = self.settings.connect_target(host)
        return self.targets[host] or _resolve(host, port)

    def exchange(self, url: str, max_bytes: int) -> _Exchange:
        ex = self._get(url, max_bytes)
        with self.lock:
            if ex.contacted:
                self.requests.append({"host": host_of(url), "url": url, "started_at": ex.started,
                                      "finished_at": ex.finished, "status": ex.status,
                                      "error_class": ex.error})
            if ex.request:
                self._write(ex)
        return ex

    def _get(self, url: str, max_bytes: int) -> _Exchange:
        """One GET over a fresh connection, every step bounded; failures end up in ``error``."""
        s = self.settings
        parts = urlsplit(url)
        ex = _Exchange(url, started=time.time())
        sock = None
        try:
            ip, port = self.address(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
            if _blocked(ip, self.allowed_nets):
                ex.error = "ssrf_blocked"
                return ex
            ex.ip, ex.contacted = ip, True
            deadline = min(ex.started + s.total_deadline, self.deadline)
            sock = socket.create_connection((ip, port), timeout=max(0.001, min(s.connect_timeout,
                                                                               deadline - time.time())))
            if parts.scheme == "https":
                sock = _tls().wrap_socket(sock, server_hostname=parts.hostname)
            head = _request_head(url, s)
            sock.sendall(head.to_bytes())
            ex.request = head
            resp = http.client.HTTPResponse(_DeadlineReader(sock, s.read_timeout, deadline),  # type: ignore
                                            method="GET")
            resp.begin()
            ex.status, ex.headers = resp.status, resp.msg
            ex.body, ex.truncated, decoded = _read_body(resp, max_bytes)
            ex.head = _stored_head(resp, len(ex.body), decoded)
        except socket.gaierror:
            ex.error = "dns"
        except TimeoutError:
            ex.error = "timeout"
        except zlib.error:
            ex.error = "bad_encoding"
        except (OSError, http.client.HTTPException):
            ex.error = "connection"
        finally:
            if sock is not None:
                sock.close()
            ex.finished = time.time()
        return ex

    def _write(self, ex: _Exchange) -> None:
        common = {"WARC-Date": _warc_date(ex.started), "WARC-IP-Address": ex.ip or ""}
        request = self.warc.create_warc_record(ex.url, "request", payload=io.BytesIO(), length=0,
                                               http_headers=ex.request, warc_headers_dict=dict(common))
        self.warc.write_record(request)
        if ex.head:
            headers = dict(common, **{"WARC-Concurrent-To": request.rec_headers["WARC-Record-ID"]})
            if ex.truncated:
                headers["WARC-Truncated"] = "length"
            self.warc.write_record(self.warc.create_warc_record(
                ex.url, "response", payload=io.BytesIO(ex.body), length=len(ex.body), http_headers=ex.head,
                warc_headers_dict=headers))

    def target_blocked(self, url: str) -> bool:
        """SSRF check of a redirect target that is not followed now (unresolvable: decided when fetched)."""
        parts = urlsplit(url)
        try:
            ip, _ = self.address(parts.hostname or "", parts.port or 80)
        except OSError:
            return False
        return _blocked(ip, self.allowed_nets)


class _HostRun:
    """Fetches the URLs of one host, one request at a time, politely; owns that host's state."""

    def __init__(self, shard: _Shard, host: str, cached: dict) -> None:
        self.shard, self.settings, self.host = shard, shard.settings, host
        self.pol = HostPoliteness(shard.settings)
        if cached.get("last_response_ms") is not None:  # kept when this call sends nothing
            self.pol.last_response = cached["last_response_ms"] / 1000.0
        self.stop: str | None = None           # error class of every URL not fetched from here on
        self.errors = 0                         # consecutive errors in this call
        self.carried_errors = cached.get("errors") or 0
        self.backoff_until = cached.get("backoff_until")
        if self.backoff_until and self.backoff_until > time.time():
            self.stop = "retry_after"
        self.info = {k: cached.get(k) for k in ("robots_status", "robots_fetched_at", "robots_txt")}

    def crawl(self, urls: list[str]) -> tuple[list[dict], dict]:
        self.shard.go.wait()
        rules = self._robots(urls[0]) if self.stop is None else None
        rows = []
        for url in urls:
            if self.stop is not None:
                rows.append(_finish(_row(url, self.host, error_class=self.stop)))
            elif not rules.allowed(url):
                rows.append(_finish(_row(url, self.host, error_class="robots_disallowed")))
            else:
                rows.append(self._fetch(url, rules))
        last = self.pol.last_response
        host_row = dict(self.info, host=self.host, crawl_delay=rules.crawl_delay if rules else None,
                        sitemaps=rules.sitemaps if rules else [], delay=self.pol.delay,
                        last_response_ms=None if last is None else last * 1000.0,
                        errors=self.carried_errors + self.errors, backoff_until=self.backoff_until)
        return rows, host_row

    def _request(self, url: str, max_bytes: int) -> _Exchange | None:
        """One request at the first moment politeness allows; None (and stop) if past the time limit."""
        start = self.pol.next_allowed()
        if max(start, time.time()) >= self.shard.deadline:
            self.stop = "deferred"
            return None
        while (left := start - time.time()) > 0:
            time.sleep(left)
        ex = self.shard.exchange(url, max_bytes)
        if ex.contacted:
            self.pol.record(ex.started, ex.finished)
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
        return ex

    def _robots(self, first_url: str) -> RobotsRules | None:
        """Rules for this host: cached within robots_ttl, else fetched (following up to five redirects)."""
        token, info = self.settings.robots_token, self.info
        status = info["robots_status"]
        fresh = info["robots_fetched_at"] is not None and \
            time.time() - info["robots_fetched_at"] < self.settings.robots_ttl
        if not (fresh and status is not None and status < 500):
            fetched_at = time.time()
            status, text = self._fetch_robots(robots_url(first_url))
            if self.stop == "deferred":  # time limit: nothing learned
                return None
            info.update(robots_status=status, robots_txt=text, robots_fetched_at=fetched_at)
            if self.stop is not None:
                return None
        rules = RobotsRules(status, info["robots_txt"], token)
        if rules.disallow_all:
            self.stop = "robots_unavailable"
        self.pol.crawl_delay = rules.crawl_delay if self.settings.obey_crawl_delay else None
        if self.pol.asks_too_much():
            self.stop = "crawl_delay"
        return rules

    def _fetch_robots(self, url: str) -> tuple[int | None, str | None]:
        for _ in range(6):  # the first request and up to five redirects (RFC 9309)
            ex = self._request(url, self.settings.robots_max_bytes)
            if ex is None:
                return None, None
            if ex.error == "ssrf_blocked":
                self.stop = "ssrf_blocked"
            if ex.error:
                return None, None
            target, error = _redirect_target(ex, self.settings)
            if error is None and target is not None:
                url = target
                continue
            if not 200 <= ex.status < 300:  # type: ignore[operator]
                return ex.status, None
            text = ex.body.decode("utf-8", "replace")
            # A cut-off last line could be a shortened (stricter or looser) rule: drop it.
            return ex.status, text.rpartition("\n")[0] if ex.truncated else text
        return ex.status, None  # still redirecting: read like no robots.txt

    def _fetch(self, url: str, rules: RobotsRules) -> dict:
        """Fetch ``url``, following same-host redirects in line (each hop waits its turn)."""
        row = _row(url, self.host)
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
            if host_of(target) != self.host or not rules.allowed(target):
                # Not followed now: the cycle admits the target to the frontier.
                if self.shard.target_blocked(target):
                    row["error_class"] = "ssrf_blocked"
                break
            if len(row["redirects"]) > self.settings.max_redirects:
                row["error_class"] = "too_many_redirects"
                break
            seen.add(target)
            current = target
        row = _finish(row)
        if row["outcome"] == "fetched" and row["redirects"]:
            # The content lives at the target, a URL of its own; this URL's state is its redirect.
            row["outcome"] = outcome_of(first_status, None)
        return row


def _redirect_target(ex: _Exchange, settings: Settings) -> tuple[str | None, str | None]:
    """(canonical target, None) of a redirect, (raw target, error class) of a bad one, (None, None) if
    the response is not a redirect."""
    if ex.status not in _REDIRECTS:
        return None, None
    location = (ex.headers.get("Location") or "").strip()
    if not location:
        return "", "bad_redirect"
    try:
        return canonicalize(location, ex.url, settings), None
    except UrlRejected as e:
        return location, "bad_scheme" if e.reason == "bad_scheme" else "bad_redirect"

