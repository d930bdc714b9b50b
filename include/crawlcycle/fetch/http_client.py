"""The fetcher's HTTP/1.1 client: bounded DNS, the SSRF guard, kept-alive connections and bounded reads.

Every step has a limit: a DNS lookup waits at most ``connect_timeout`` (answers and failures are kept for the
rest of the fetch call), connecting too, each read ``read_timeout``, the whole response ``total_deadline``, the
body ``max_bytes`` after decompression. The SSRF guard checks the address a connection is opened to, so a kept
connection was checked when it was opened. Failures end up as an error class in ``Exchange.error``.

A GET of a stored page (a refresh) is conditional: it sends the validators its stored copy was fetched with
(``StoredCopy``), If-None-Match for an ETag and If-Modified-Since for a Last-Modified, and a 304 answer has no body.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import io
import ipaddress
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import quote, urlsplit

from warcio.statusandheaders import StatusAndHeaders

from crawlcycle.contracts.fetch_errors import ErrorClass
from crawlcycle.settings import Settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
GetAddrInfo = Callable[..., list]
_CODINGS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_KEEP_ALIVE_TIMEOUT = re.compile(r"timeout\s*=\s*(\d+)", re.IGNORECASE)
# A server closes an idle kept-alive connection when it likes; one that failed before any byte of the answer
# came is opened again once (the request never reached the server).
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class DnsError(OSError):
    """A host name without an address: no answer, a failure, or no answer within the time limit."""


@dataclass(frozen=True)
class StoredCopy:
    """The stored copy of a page fetched again: the validators its server sent (for a conditional request), and the
    payload digest and date of the WARC record holding it (what a revisit record refers to)."""

    etag: str | None = None
    last_modified: str | None = None
    payload_digest: str | None = None   # WARC-Payload-Digest form, sha1:<base32>
    fetched_at: float | None = None     # the record's WARC-Date, epoch seconds


@dataclass
class Exchange:
    """One GET: what was sent, what came back, and how it ended."""

    url: str
    started: float
    stored: StoredCopy | None = None          # the copy a refresh compares the answer with
    finished: float = 0.0
    contacted: bool = False          # a connection was attempted (counts for politeness)
    new_connection: bool = False     # a connection was opened for it (not reused)
    ip: str | None = None
    request: StatusAndHeaders | None = None   # request line and headers, once sent
    status: int | None = None
    headers: Message = field(default_factory=Message)
    head: StatusAndHeaders | None = None      # response head as stored, once the body is read
    body: bytes = b""
    truncated: bool = False
    error: ErrorClass | None = None

    @property
    def conditional(self) -> bool:
        """Whether the request sent validators (If-None-Match, If-Modified-Since)."""
        return self.stored is not None and bool(self.stored.etag or self.stored.last_modified)

    @property
    def payload_digest(self) -> str:
        """The body's WARC-Payload-Digest as warcio writes it: ``sha1:`` and the base32 SHA-1."""
        return "sha1:" + base64.b32encode(hashlib.sha1(self.body).digest()).decode("ascii")

    @property
    def not_modified(self) -> bool:
        """A 304 answer to a conditional request: the stored copy is current."""
        return self.status == 304 and self.conditional

    def validator(self, name: str) -> str | None:
        """The answer's ``ETag`` or ``Last-Modified`` header, as sent (None: none, or no answer)."""
        return self.headers.get(name) if self.status is not None else None


class Resolver:
    """Addresses of host names for one fetch call: each host is looked up once (its first answer, IPv4 first,
    or its failure is kept), and a lookup waits at most ``timeout`` seconds. ``connect_to`` answers first."""

    def __init__(self, settings: Settings, getaddrinfo: GetAddrInfo = socket.getaddrinfo) -> None:
        self.timeout = settings.connect_timeout
        self._settings = settings
        self._getaddrinfo = getaddrinfo
        # per host: its connect_to target (address, port), its address, or why it has none
        self._answers: dict[str, tuple[str, int] | str | DnsError] = {}
        self._lock = threading.Lock()

    def address(self, host: str, port: int) -> tuple[str, int]:
        """Where to connect for ``host``: its connect_to target, else its address and ``port``."""
        with self._lock:
            answer = self._answers.get(host)
        if answer is None:
            answer = self._settings.connect_target(host) or self._lookup(host, port)
            with self._lock:
                self._answers[host] = answer
        if isinstance(answer, DnsError):
            raise answer
        return answer if isinstance(answer, tuple) else (answer, port)

    def _lookup(self, host: str, port: int) -> str | DnsError:
        # getaddrinfo takes no timeout: it runs in a thread of its own, which is left behind if it hangs.
        box: dict[str, object] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["infos"] = self._getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as e:
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=run, name=f"dns {host}", daemon=True).start()
        if not done.wait(self.timeout):
            return DnsError(f"{host}: no DNS answer within {self.timeout} s")
        infos = box.get("infos")
        if not infos:
            return DnsError(f"{host}: {box.get('error') or 'no address'}")
        infos = sorted(infos, key=lambda info: info[0] != socket.AF_INET)  # type: ignore[arg-type]
        return infos[0][4][0]


def allowed_networks(settings: Settings) -> list[Network]:
    """The networks ``allow_networks`` exempts from the SSRF guard."""
    return [ipaddress.ip_network(c, strict=False) for c in settings.allow_networks_list()]


def blocked(ip: str, allowed: list[Network]) -> bool:
    """SSRF guard: only globally routable unicast addresses, unless inside ``allow_networks``."""
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    if any(addr in net for net in allowed):
        return False
    return not addr.is_global or addr.is_multicast


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


@dataclass
class _Connection:
    sock: socket.socket
    ip: str
    idle_limit: float | None = None   # the server's Keep-Alive timeout, if it said one
    last_used: float = 0.0

    def usable(self, now: float) -> bool:
        # A second of margin: the server's clock starts when its last byte left.
        return self.idle_limit is None or now - self.last_used + 1.0 < self.idle_limit


def request_head(url: str, user_agent: str, stored: StoredCopy | None = None) -> StatusAndHeaders:
    """The request line and headers of a GET of ``url``; conditional on the validators of ``stored``, if any."""
    parts = urlsplit(url)
    target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~") + (f"?{parts.query}" if parts.query else "")
    conditions = [("If-None-Match", stored.etag), ("If-Modified-Since", stored.last_modified)] if stored else []
    return StatusAndHeaders(f"GET {target} HTTP/1.1", [
        ("Host", parts.netloc.rpartition("@")[2]), ("User-Agent", user_agent),
        ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"), ("Accept-Encoding", "gzip, deflate"),
        *((name, value) for name, value in conditions if value)], is_http_request=True)


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


class Client:
    """The connections of one host's run: at most one per origin, kept while the server keeps it alive and
    closed by ``close()``. One request at a time (the caller's politeness)."""

    def __init__(self, settings: Settings, resolver: Resolver, allowed: list[Network]) -> None:
        self.settings, self.resolver, self.allowed = settings, resolver, allowed
        self._open: dict[tuple[str, str, int], _Connection] = {}

    def get(self, url: str, max_bytes: int, deadline: float, stored: StoredCopy | None = None) -> Exchange:
        """One GET, every step bounded (the response also by ``deadline``), conditional on ``stored``'s validators;
        failures end up in ``error``."""
        s = self.settings
        parts = urlsplit(url)
        origin = (parts.scheme, parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        ex = Exchange(url, started=time.time(), stored=stored)
        deadline = min(ex.started + s.total_deadline, deadline)
        conn = self._open.pop(origin, None)
        if conn is not None and not conn.usable(ex.started):
            conn.sock.close()
            conn = None
        try:
            try:
                if conn is None:
                    conn = self._connect(origin, ex, deadline)
                    if conn is None:
                        return ex
                ex.ip, ex.contacted = conn.ip, True
                resp = self._send(conn, url, ex, deadline)
            except _STALE:
                if ex.new_connection:
                    raise
                conn.sock.close()
                conn = self._connect(origin, ex, deadline)
                if conn is None:
                    return ex
                resp = self._send(conn, url, ex, deadline)
            ex.status, ex.headers = resp.status, resp.msg
            ex.body, ex.truncated, decoded = _read_body(resp, max_bytes)
            ex.head = _stored_head(resp, len(ex.body), decoded)
            if not resp.will_close and not ex.truncated:
                limit = _KEEP_ALIVE_TIMEOUT.search(resp.getheader("Keep-Alive") or "")
                conn.idle_limit = float(limit[1]) if limit else None
                conn.last_used = time.time()
                self._open[origin], conn = conn, None
        except DnsError:
            ex.error = ErrorClass.DNS
        except TimeoutError:
            ex.error = ErrorClass.TIMEOUT
        except zlib.error:
            ex.error = ErrorClass.BAD_ENCODING
        except ssl.SSLError:  # before OSError, of which it is one: a failed handshake is not a refused connection
            ex.error = ErrorClass.TLS
        except (OSError, http.client.HTTPException):
            ex.error = ErrorClass.CONNECTION
        finally:
            if conn is not None:
                conn.sock.close()
            ex.finished = time.time()
        return ex

    def _connect(self, origin: tuple[str, str, int], ex: Exchange, deadline: float) -> _Connection | None:
        """A new connection to a checked address, or None when the SSRF guard refuses it (``ex.error`` set)."""
        scheme, host, port = origin
        ip, port = self.resolver.address(host, port)
        if blocked(ip, self.allowed):
            ex.error = ErrorClass.SSRF_BLOCKED
            return None
        ex.ip, ex.contacted, ex.new_connection = ip, True, True
        sock = socket.create_connection((ip, port), timeout=max(0.001, min(self.settings.connect_timeout,
                                                                           deadline - time.time())))
        if scheme == "https":
            try:
                sock = _tls().wrap_socket(sock, server_hostname=host)
            except BaseException:
                sock.close()
                raise
        return _Connection(sock, ip)

    def _send(self, conn: _Connection, url: str, ex: Exchange, deadline: float) -> http.client.HTTPResponse:
        head = request_head(url, self.settings.user_agent, ex.stored)
        conn.sock.settimeout(max(0.001, min(self.settings.read_timeout, deadline - time.time())))
        conn.sock.sendall(head.to_bytes())
        ex.request = head
        resp = http.client.HTTPResponse(_DeadlineReader(conn.sock, self.settings.read_timeout, deadline),  # type: ignore
                                        method="GET")
        resp.begin()
        return resp

    def target_blocked(self, url: str) -> bool:
        """SSRF check of a redirect target that is not followed now (unresolvable: decided when fetched)."""
        parts = urlsplit(url)
        try:
            ip, _ = self.resolver.address(parts.hostname or "", parts.port or 80)
        except OSError:
            return False
        return blocked(ip, self.allowed)

    def close(self) -> None:
        for conn in self._open.values():
            conn.sock.close()
        self._open.clear()
