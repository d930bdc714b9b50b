"""Serve WARC snapshots over HTTP on loopback: many hosts in one process, told apart by ``Host``.

Each ``response`` record of the WARC files becomes one URL. A request is answered with the recorded
status, headers and (decoded) body; a URL that is not in the snapshot answers 404, so a host without
a recorded robots.txt has none. When a URL was recorded more than once, the last record wins (a later
capture replaces an earlier one). Clients connect to the server's address and send the original
host name (``Host: python.docs.test``); absolute-form request targets (``GET http://host/path``)
work too, so the server can also be used as an HTTP proxy (``curl -x``).

A web that changes is a :class:`Series`: versions of the same hosts, each a set of WARC files with a start time (a
cycle number, or a date's ordinal for the demo web). The server's current time is set by whoever drives it
(``ServerHandle.set_time``, or a clock function). Which version a URL is served from at time t:

- ``at-start``: the last version that started at or before t (the first before its start);
- ``drawn`` (the default): each URL moves from version i to version i + 1 at a cycle drawn for it, uniformly from
  start_i + 1 to start_(i+1) (a hash of the seed, the step and the URL, so the same seed moves the same URLs at the
  same cycles); by start_(i+1) every URL has moved, as with ``at-start``.

A URL missing from the version it is served from answers 404: a page new in a version appears at its switch, a page
the version dropped is gone from its switch on. One WARC (or one set of files) is a series of one version.

Directories are answered as a static server with an index file answers them (``directory_index``): a missing
``dir/`` whose ``dir/index.html`` is served redirects there (301), and a missing ``dir`` whose ``dir/index.html``
is served redirects to ``dir/`` (301, as nginx and Apache do for a directory named without its slash). So a link to
a directory reaches its page as on the live site, and the page keeps one URL, that of its record (the ground truth's
``aliases``).

Conditional requests are answered from the validators the served response carries, as nginx answers them for a
static file: ``If-None-Match`` naming its ``ETag`` (weak comparison, or ``*``) gives 304, and without
``If-None-Match``, an ``If-Modified-Since`` equal to its ``Last-Modified`` gives 304 (an exact match, as nginx's
``if_modified_since exact``: a page's date can go back from one version to the next). A 304 carries ``Date``,
``ETag`` and ``Last-Modified`` and no body. Only 200 responses are answered so.

Behaviour per host is a dict such as ``{"slow.demo.test": {"delay": 0.3}}``:

- ``delay``: seconds waited before answering any request for that host;
- ``conditional: false``: conditional requests are ignored (every answer is the whole 200);
- ``validators: "none"``: neither ``ETag`` nor ``Last-Modified`` is sent;
- ``validators: "fixed-date"``: no ``ETag``, and every response says ``Last-Modified: FIXED_DATE`` (as a server of
  files that all carry one modification time), so an ``If-Modified-Since`` of that date is answered 304 even after
  the page changed.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, urlsplit

from warcio.archiveiterator import ArchiveIterator, ArchiveLoadFailed
from warcio.bufferedreaders import BufferedReader

from crawlcycle.contracts.errors import InputError

# Replaying these would be wrong: they describe one hop, or the encoding of the recorded bytes
# (the body is served decoded and its length recomputed).
_DROPPED_HEADERS = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "trailers", "transfer-encoding", "upgrade", "content-length",
})
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_KEPT_LITERAL = "/?:@!$&'()*+,;=%~"
SWITCHES = ("drawn", "at-start")
FIXED_DATE = "Thu, 01 Jan 2026 00:00:00 GMT"  # the one Last-Modified of a host with behaviour validators: fixed-date
_VALIDATORS = frozenset({"etag", "last-modified"})
_NOT_MODIFIED_HEADERS = frozenset({"date", "etag", "last-modified", "cache-control", "expires", "vary"})


def canonical_target(raw: bytes) -> str:
    """``path?query`` in one percent-encoding form, so that ``/%7Eme`` and ``/~me`` are one URL.

    Escapes of unreserved characters are decoded, other escapes get upper-case hex, and bytes that
    may not appear literally in a URL (spaces, non-ASCII) are escaped as UTF-8. The fragment is
    dropped; nothing else changes (no trailing-slash or dot-segment rewriting).
    """
    raw = raw.split(b"#", 1)[0]
    raw = re.sub(rb"%([0-9A-Fa-f]{2})",
                 lambda m: bytes([int(m[1], 16)]) if int(m[1], 16) in _UNRESERVED else b"%" + m[1].upper(),
                 raw)
    return quote(raw, safe=_KEPT_LITERAL) or "/"


def host_key(host: str) -> str:
    """Lower-case host name without port or trailing dot."""
    host = host.strip().lower()
    host = host.split("]")[0] + "]" if host.startswith("[") else host.split(":")[0]
    return host.rstrip(".")


def _split_url(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    return host_key(parts.netloc.rpartition("@")[2]), target


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: list[tuple[str, str]]  # as recorded, minus hop-by-hop, length and decoded encoding
    body: bytes  # decoded payload

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


NOT_FOUND = Response(404, "Not Found", [("Content-Type", "text/plain; charset=utf-8")],
                     b"404 Not Found: this URL is not in the snapshot\n")
INDEX_FILE = "index.html"


def directory_index(target: str) -> tuple[str, str] | None:
    """For a ``path?query`` that may name a directory: (the index file's record, which a static server reads whatever
    the query, and where it redirects the request); None for a file's name. ``dir/?q`` -> (``dir/index.html``,
    ``dir/index.html?q``); ``dir?q`` -> (``dir/index.html``, ``dir/?q``)."""
    path, sep, query = target.partition("?")
    if path.endswith("/"):
        return path + INDEX_FILE, path + INDEX_FILE + sep + query
    if "." in path.rsplit("/", 1)[-1]:
        return None
    return f"{path}/{INDEX_FILE}", f"{path}/{sep}{query}"


def moved(location: str) -> Response:
    """A permanent redirect to ``location`` (a path on the same host)."""
    return Response(301, "Moved Permanently", [("Location", location), ("Content-Type", "text/plain; charset=utf-8")],
                    f"301 Moved Permanently: {location}\n".encode())


class WarcWeb:
    """Index of WARC response records: (host, canonical path?query) -> where the record starts and its length.

    Only offsets are kept in memory; a record is read from its file when it is asked for.
    """

    def __init__(self, warcs: Iterable[Path | str]) -> None:
        self.files = [Path(p) for p in warcs]
        self._index: dict[tuple[str, str], tuple[int, int, int, str]] = {}
        for n, path in enumerate(self.files):
            with path.open("rb") as f:
                records = ArchiveIterator(f)
                for rec in records:
                    # Some WARC 1.0 writers wrap the URI in <...>.
                    uri = (rec.rec_headers.get_header("WARC-Target-URI") or "").strip("<>")
                    if rec.rec_type != "response" or not rec.http_headers or not uri.startswith("http"):
                        continue
                    records.read_to_end(rec)
                    host, target = _split_url(uri)
                    self._index[host, canonical_target(target.encode("utf-8"))] = (
                        n, records.get_record_offset(), records.get_record_length(), uri)

    def __len__(self) -> int:
        return len(self._index)

    def hosts(self) -> set[str]:
        return {host for host, _ in self._index}

    def urls(self) -> Iterator[str]:
        """The recorded URLs, as written in the WARC files."""
        return (where[3] for where in self._index.values())

    def lookup(self, host: str, target: str | bytes) -> Response | None:
        """The recorded response for ``target`` (``path?query``) on ``host``, or None."""
        where = self._index.get(_key(host, target))
        return None if where is None else self._read(*where[:2])

    def get(self, url: str) -> Response | None:
        """The recorded response for an absolute URL, or None."""
        return self.lookup(*_split_url(url))

    def raw_record(self, key: tuple[str, str]) -> bytes:
        """The record of ``key`` as one gzip member (copied as it is from a gzip-compressed file)."""
        file_no, offset, length, _ = self._index[key]
        with self.files[file_no].open("rb") as f:
            f.seek(offset)
            raw = f.read(length)
        return raw if raw[:2] == b"\x1f\x8b" else gzip.compress(raw, mtime=0)

    def _read(self, file_no: int, offset: int) -> Response:
        with self.files[file_no].open("rb") as f:
            f.seek(offset)
            rec = next(iter(ArchiveIterator(f)))
            body = rec.content_stream().read()
            http = rec.http_headers
            encoding = (http.get_header("Content-Encoding") or "").lower()
            decoded = encoding in BufferedReader.get_supported_decompressors()
            headers = [(k, v) for k, v in http.headers if k.lower() not in _DROPPED_HEADERS
                       and not (decoded and k.lower() == "content-encoding")]
            status, _, reason = http.statusline.partition(" ")
            return Response(int(status), reason, headers, body)


def _key(host: str, target: str | bytes) -> tuple[str, str]:
    raw = target if isinstance(target, bytes) else target.encode("utf-8")
    return host_key(host), canonical_target(raw)


class Series:
    """Versions of the same hosts, each a set of WARC files and its start time, and the version each URL is served
    from at a time (``switch``, ``seed``: see the module's docstring)."""

    def __init__(self, versions: Sequence[tuple[Sequence[Path | str], int]], switch: str = "drawn",
                 seed: int = 0) -> None:
        if switch not in SWITCHES:
            raise ValueError(f"switch must be one of {', '.join(SWITCHES)}, got {switch!r}")
        self.starts = [start for _, start in versions]
        if not self.starts or any(b <= a for a, b in zip(self.starts, self.starts[1:], strict=False)):
            raise ValueError(f"version starts must increase, got {self.starts}")
        self.webs = [WarcWeb(files) for files, _ in versions]
        self.switch, self.seed = switch, seed

    @classmethod
    def single(cls, warcs: Sequence[Path | str]) -> Series:
        """One unchanging snapshot."""
        return cls([(warcs, 0)])

    def __len__(self) -> int:
        return len(self._keys())

    def hosts(self) -> set[str]:
        return set().union(*(web.hosts() for web in self.webs))

    def switch_time(self, key: tuple[str, str], step: int) -> int:
        """When the URL ``key`` moves from version ``step`` to version ``step + 1``."""
        start, end = self.starts[step], self.starts[step + 1]
        if self.switch == "at-start":
            return end
        digest = hashlib.blake2b(f"{self.seed}\n{step}\n{key[0]}\n{key[1]}".encode(), digest_size=8).digest()
        return start + 1 + int.from_bytes(digest) % (end - start)

    def version(self, host: str, target: str | bytes, t: int) -> int:
        """The version (0-based) that serves ``target`` on ``host`` at time ``t``."""
        key = _key(host, target)
        return sum(1 for step in range(len(self.webs) - 1) if self.switch_time(key, step) <= t)

    def version_of(self, url: str, t: int) -> int:
        """The version (0-based) that serves the absolute URL ``url`` at time ``t``."""
        return self.version(*_split_url(url), t)

    def lookup(self, host: str, target: str | bytes, t: int) -> tuple[Response | None, int]:
        """The response for ``target`` on ``host`` at time ``t`` (None: not in the version serving it, nor a directory
        whose index file it serves: ``directory_index``) and that version."""
        v = self.version(host, target, t)
        if (found := self.webs[v].lookup(host, target)) is not None:
            return found, v
        key = _key(host, target)
        if (index := directory_index(key[1])) is None:
            return None, v
        record, location = index
        w = self.version(host, record, t)
        return (moved(location) if self.webs[w].lookup(host, record) is not None else None), v

    def served(self, t: int) -> tuple[int, ...]:
        """The version serving each URL at time ``t`` (in the order of the sorted URLs): equal for equal webs."""
        return tuple(self.version(*key, t) for key in sorted(self._keys()))

    def first_switch(self) -> int | None:
        """The first time a URL of the first two versions moves (None for one version)."""
        if len(self.webs) == 1:
            return None
        keys = self.webs[0]._index.keys() | self.webs[1]._index.keys()
        return min((self.switch_time(key, 0) for key in keys), default=self.starts[1])

    def write_live(self, t: int, path: Path) -> int:
        """The web served at time ``t`` as one gzip-compressed WARC: for each URL, the record of the version serving
        it, if that version has it; return the records written."""
        written = 0
        with path.open("wb") as out:
            for key in sorted(self._keys()):
                web = self.webs[self.version(*key, t)]
                if key in web._index:
                    out.write(web.raw_record(key))
                    written += 1
        return written

    def _keys(self) -> set[tuple[str, str]]:
        return set().union(*(web._index.keys() for web in self.webs))


def answer(resp: Response, request_headers: dict[str, str], behaviour: dict) -> Response:
    """``resp`` as a host with ``behaviour`` sends it to a request with ``request_headers`` (lower-case names):
    its validators per ``validators``, and 304 Not Modified where a condition holds (unless the host ignores
    conditions)."""
    validators = behaviour.get("validators")
    if validators in ("none", "fixed-date"):
        headers = [(k, v) for k, v in resp.headers if k.lower() not in _VALIDATORS]
        if validators == "fixed-date":
            headers.append(("Last-Modified", FIXED_DATE))
        resp = Response(resp.status, resp.reason, headers, resp.body)
    if resp.status != 200 or behaviour.get("conditional", True) is False or not _not_modified(resp, request_headers):
        return resp
    return Response(304, "Not Modified", [(k, v) for k, v in resp.headers if k.lower() in _NOT_MODIFIED_HEADERS],
                    b"")


def _not_modified(resp: Response, request_headers: dict[str, str]) -> bool:
    """Whether the request's conditions say the client holds ``resp`` (RFC 9110: If-None-Match, when sent, decides
    alone)."""
    if "if-none-match" in request_headers:
        etag = resp.header("etag")
        tags = [t.strip().removeprefix("W/") for t in request_headers["if-none-match"].split(",")]
        return "*" in tags or etag is not None and etag.removeprefix("W/") in tags
    since, modified = request_headers.get("if-modified-since"), resp.header("last-modified")
    if since is None or modified is None:
        return False
    try:
        return parsedate_to_datetime(since) == parsedate_to_datetime(modified)
    except (TypeError, ValueError):
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], web: Series, behaviour: dict, log: bool,
                 clock: Callable[[], int]) -> None:
        super().__init__(address, _Handler)
        self.web, self.behaviour, self.log, self.clock = web, behaviour, log, clock

    def handle_error(self, request: object, client_address: tuple) -> None:
        if self.log:
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30  # an idle keep-alive connection gives its thread back after this
    server: _Server

    def do_GET(self) -> None:
        self._reply(send_body=True)

    def do_HEAD(self) -> None:
        self._reply(send_body=False)

    def _reply(self, send_body: bool) -> None:
        # http.server decodes the request line as latin-1: encoding back gives the bytes sent.
        raw = self.path.encode("latin-1")
        if raw[:7].lower() == b"http://" or raw[:8].lower() == b"https://":
            host, target = _split_url(self.path)
        else:
            host, target = host_key(self.headers.get("Host", "")), raw
        behaviour = self.server.behaviour.get(host, {})
        delay = float(behaviour.get("delay", 0))
        if delay > 0:
            time.sleep(delay)
        found, version = self.server.web.lookup(host, target, self.server.clock())
        resp = answer(found or NOT_FOUND, {k.lower(): v for k, v in self.headers.items()}, behaviour)
        self.send_response_only(resp.status, resp.reason)
        for name, value in resp.headers:
            self.send_header(name, value)
        if resp.status != 304:
            self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(resp.body)
        if self.server.log:
            served = f" v{version + 1}" if len(self.server.web.webs) > 1 else ""
            sys.stderr.write(f'{self.client_address[0]} {host} "{self.requestline}" {resp.status} '
                             f"{len(resp.body)}{served}\n")

    def log_message(self, format: str, *args: object) -> None:
        if self.server.log:
            super().log_message(format, *args)


@dataclass
class ServerHandle:
    """A running server; ``stop()`` (or leaving the ``with`` block) shuts it down."""

    server: _Server
    thread: threading.Thread

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self.server.server_address[0]}:{self.port}"

    def set_time(self, t: int) -> None:
        """Serve the web as it is at time ``t`` from now on."""
        self.server.clock = lambda: t

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _server(web: Series | Sequence[Path], host: str, port: int, behaviour: dict | None, log: bool,
            clock: Callable[[], int] | None) -> _Server:
    web = web if isinstance(web, Series) else Series.single(web)
    return _Server((host, port), web, behaviour or {}, log, clock or (lambda: web.starts[0]))


def serve(web: Series | Sequence[Path], host: str = "127.0.0.1", port: int = 0, behaviour: dict | None = None,
          log: bool = False, clock: Callable[[], int] | None = None) -> ServerHandle:
    """Start serving ``web`` (a series, or the WARC files of one snapshot) in a background thread; port 0 picks a
    free port. ``clock`` gives the time to serve (default: the first version's start; see ``set_time``)."""
    server = _server(web, host, port, behaviour, log, clock)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), name="warc-web", daemon=True)
    thread.start()
    return ServerHandle(server, thread)


def run_forever(web: Series | Sequence[Path], host: str = "127.0.0.1", port: int = 8089,
                behaviour: dict | None = None, log: bool = True, clock: Callable[[], int] | None = None) -> None:
    """Serve ``web`` in the foreground until interrupted."""
    server = _server(web, host, port, behaviour, log, clock)
    versions = f" in {len(server.web.webs)} versions" if len(server.web.webs) > 1 else ""
    sys.stderr.write(f"serving {len(server.web)} URLs of {len(server.web.hosts())} hosts{versions} on "
                     f"http://{host}:{server.server_address[1]}\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def loopback_routes(hosts: set[str], port: int) -> str:
    """A connect_to value sending every host of ``hosts``, and every other host under their top-level domains,
    to the snapshot server: a frontier URL outside the snapshot gets its 404 there, never from the internet."""
    suffixes = {f"*.{h.rsplit('.', 1)[1]}" if "." in h else h for h in hosts if h}
    return ",".join(f"{s}=127.0.0.1:{port}" for s in sorted(suffixes))


def check_warc(path: Path, name: str) -> Path:
    """``path`` if it is a WARC file one can read (its first record is read now, rather than fail later in a
    server or a simulation); else InputError naming ``name`` (the setting or flag), the file and the reason."""
    not_warc = InputError(f"{name}: {path} is not a WARC file (WARC records, plain or gzip-compressed)")
    try:
        with path.open("rb") as f:
            first = next(iter(ArchiveIterator(f)), None)
    except FileNotFoundError:
        raise InputError(f"{name}: {path} does not exist") from None
    except OSError as e:
        raise InputError(f"{name}: {path} cannot be read ({e.strerror or e})") from None
    except (ArchiveLoadFailed, EOFError, zlib.error):
        raise not_warc from None
    if first is None:
        raise InputError(f"{name}: {path} holds no WARC record")
    if first.format != "warc" or first.rec_type is None:  # warcio takes a line of five words for an ARC header
        raise not_warc
    return path
