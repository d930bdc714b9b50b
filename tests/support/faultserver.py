"""A loopback HTTP server that misbehaves on purpose: one scripted handler per (host, path).

Every request head read logs (time, host, path) in ``hits`` and runs the handler for the Host header and
path (a route path ending in ``*`` matches by prefix; host ``*`` matches any host). Handlers write raw bytes,
so they can trickle, hang, reset or lie. A handler that returns True keeps the connection open for the next
request (``respond(keep_alive=True)``); otherwise the server closes it. ``connections`` counts accepted ones.
"""

from __future__ import annotations

import gzip
import socket
import struct
import threading
import time
from collections.abc import Callable
from http import HTTPStatus

Handler = Callable[[socket.socket, str], bool | None]


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def respond(status: int = 200, body: bytes = b"", headers: dict[str, str] | None = None,
            content_type: str | None = "text/html; charset=utf-8", delay: float = 0.0,
            keep_alive: bool = False) -> Handler:
    """A complete response with Content-Length, sent after ``delay`` seconds."""
    def handle(conn: socket.socket, path: str) -> bool:
        time.sleep(delay)
        h = {"Content-Type": content_type} if content_type else {}
        h.update(headers or {})
        h.update({"Content-Length": str(len(body)), "Connection": "keep-alive" if keep_alive else "close"})
        conn.sendall(_head(status, h) + body)
        return keep_alive
    return handle


def page(text: str, **kwargs: object) -> Handler:
    return respond(200, f"<html><head><title>{text}</title></head><body>{text}</body></html>".encode(),
                   **kwargs)  # type: ignore[arg-type]


def redirect(location: str, status: int = 302) -> Handler:
    return respond(status, b"", {"Location": location}, content_type=None)


def chunked(parts: list[bytes]) -> Handler:
    def handle(conn: socket.socket, path: str) -> None:
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
        conn.sendall(_head(200, {"Content-Type": "text/html", "Transfer-Encoding": "chunked"}) + body)
    return handle


def gzipped(body: bytes) -> Handler:
    """``body`` with Content-Encoding: gzip (a gzip bomb when body is large and repetitive)."""
    data = gzip.compress(body, compresslevel=9)
    return respond(200, data, {"Content-Encoding": "gzip"})


def trickle(size: int, interval: float) -> Handler:
    """Announce ``size`` bytes, then send one byte every ``interval`` seconds."""
    def handle(conn: socket.socket, path: str) -> None:
        conn.sendall(_head(200, {"Content-Type": "text/html", "Content-Length": str(size)}))
        for _ in range(size):
            time.sleep(interval)
            conn.sendall(b"x")
    return handle


def hang(seconds: float = 5.0) -> Handler:
    """Read the request and answer nothing."""
    def handle(conn: socket.socket, path: str) -> None:
        time.sleep(seconds)
    return handle


def reset_mid_body(announced: int = 10_000, sent: int = 100) -> Handler:
    """Announce ``announced`` bytes, send ``sent`` of them, then reset the connection (RST)."""
    def handle(conn: socket.socket, path: str) -> None:
        conn.sendall(_head(200, {"Content-Type": "text/html", "Content-Length": str(announced)}) + b"y" * sent)
        time.sleep(0.05)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
    return handle


class FaultServer:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.routes: dict[tuple[str, str], Handler] = {}
        self.hits: list[tuple[float, str, str]] = []
        self.connections = 0
        self._closing = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def route(self, host: str, path: str, handler: Handler) -> None:
        self.routes[(host, path)] = handler

    def hits_of(self, host: str) -> list[str]:
        return [path for _, h, path in self.hits if h == host]

    def close(self) -> None:
        self._closing.set()
        self.sock.close()

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _find(self, host: str, path: str) -> Handler:
        for key in ((host, path), ("*", path)):
            if key in self.routes:
                return self.routes[key]
        prefixes = [(h, p) for h, p in self.routes if p.endswith("*") and h in (host, "*")
                    and path.startswith(p[:-1])]
        if prefixes:
            return self.routes[max(prefixes, key=lambda k: len(k[1]))]
        return respond(404, b"not found")

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(5)
                data = b""
                while True:
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(4096)
                        if not chunk:
                            return
                        data += chunk
                    head, data = data.split(b"\r\n\r\n", 1)
                    lines = head.decode("latin-1").split("\r\n")
                    path = lines[0].split(" ")[1]
                    headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
                    host = {k.lower(): v.strip() for k, v in headers.items()}.get("host", "").rsplit(":", 1)[0]
                    self.hits.append((time.time(), host, path))
                    if not self._find(host, path)(conn, path):
                        return
            except OSError:
                pass  # the client went away: expected in these tests
