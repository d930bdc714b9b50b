"""Serve WARC snapshots over HTTP on loopback: many hosts in one process, told apart by ``Host``.

Each ``response`` record of the WARC files becomes one URL. A request is answered with the recorded
status, headers and (decoded) body; a URL that is not in the snapshot answers 404, so a host without
a recorded robots.txt has none. When a URL was recorded more than once, the last record wins (a later
capture replaces an earlier one). Clients connect to the server's address and send the original
host name (``Host: python.docs.test``); absolute-form request targets (``GET http://host/path``)
work too, so the server can also be used as an HTTP proxy (``curl -x``).

Behaviour per host is a dict such as ``{"slow.demo.test": {"delay": 0.3}}``: ``delay`` seconds are
waited before answering any request for that host.
"""

from __future__ import annotations

import re
import sys
import threading
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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


NOT_FOUND = Response(404, "Not Found", [("Content-Type", "text/plain; charset=utf-8")],
                     b"404 Not Found: this URL is not in the snapshot\n")


class WarcWeb:
    """Index of WARC response records: (host, canonical path?query) -> where the record starts.

    Only offsets are kept in memory; a record is read from its file when it is asked for.
    """

    def __init__(self, warcs: Iterable[Path | str]) -> None:
        self.files = [Path(p) for p in warcs]
        self._index: dict[tuple[str, str], tuple[int, int, str]] = {}
        for n, path in enumerate(self.files):
            with path.open("rb") as f:
                records = ArchiveIterator(f)
                for rec in records:
                    # Some WARC 1.0 writers wrap the URI in <...>.
                    uri = (rec.rec_headers.get_header("WARC-Target-URI") or "").strip("<>")
                    if rec.rec_type != "response" or not rec.http_headers or not uri.startswith("http"):
                        continue
                    host, target = _split_url(uri)
                    self._index[host, canonical_target(target.encode("utf-8"))] = (n, records.offset, uri)

    def __len__(self) -> int:
        return len(self._index)

    def hosts(self) -> set[str]:
        return {host for host, _ in self._index}

    def urls(self) -> Iterator[str]:
        """The recorded URLs, as written in the WARC files."""
        return (uri for _, _, uri in self._index.values())

    def lookup(self, host: str, target: str | bytes) -> Response | None:
        """The recorded response for ``target`` (``path?query``) on ``host``, or None."""
        raw = target if isinstance(target, bytes) else target.encode("utf-8")
        where = self._index.get((host_key(host), canonical_target(raw)))
        return None if where is None else self._read(*where[:2])

    def get(self, url: str) -> Response | None:
        """The recorded response for an absolute URL, or None."""
        return self.lookup(*_split_url(url))

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


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], web: WarcWeb, behaviour: dict, log: bool) -> None:
        super().__init__(address, _Handler)
        self.web, self.behaviour, self.log = web, behaviour, log

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
        delay = float(self.server.behaviour.get(host, {}).get("delay", 0))
        if delay > 0:
            time.sleep(delay)
        resp = self.server.web.lookup(host, target) or NOT_FOUND
        self.send_response_only(resp.status, resp.reason)
        for name, value in resp.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if send_body:
            self.wfile.write(resp.body)
        if self.server.log:
            sys.stderr.write(f'{self.client_address[0]} {host} "{self.requestline}" {resp.status} '
                             f"{len(resp.body)}\n")

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

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(warcs: list[Path], host: str = "127.0.0.1", port: int = 0, behaviour: dict | None = None,
          log: bool = False) -> ServerHandle:
    """Start serving ``warcs`` in a background thread; port 0 picks a free port."""
    server = _Server((host, port), WarcWeb(warcs), behaviour or {}, log)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), name="warc-web", daemon=True)
    thread.start()
    return ServerHandle(server, thread)


def run_forever(warcs: list[Path], host: str = "127.0.0.1", port: int = 8089,
                behaviour: dict | None = None, log: bool = True) -> None:
    """Serve ``warcs`` in the foreground until interrupted."""
    web = WarcWeb(warcs)
    server = _Server((host, port), web, behaviour or {}, log)
    sys.stderr.write(f"serving {len(web)} URLs of {len(web.hosts())} hosts on "
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
