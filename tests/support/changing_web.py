"""A small web on loopback whose pages change between cycles, served the ways real servers serve them: one host per
way of answering a conditional request (``WAYS``), and one per way of dating its pages in a sitemap (``SITEMAPS``).
Pages are real HTML; ``requests`` keeps the headers of every request, so that a test sees which conditions the crawler
sent."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# host -> how it answers: its validators, and whether it honours conditional requests
WAYS = {
    "etag.test": "an ETag per version; If-None-Match answered 304",
    "lastmod.test": "a Last-Modified per version; If-Modified-Since answered 304",
    "ignores.test": "an ETag and a Last-Modified, conditions ignored: always 200",
    "samedate.test": "one Last-Modified for every version (all files of a release share an mtime); conditions ignored",
    "stale.test": "one Last-Modified for every version, and If-Modified-Since answered 304 by it, changed or not",
    "plain.test": "no validators",
}
SAME_DATE = formatdate(1_700_000_000, usegmt=True)
# host -> the <lastmod> its /sitemap.xml gives each of its pages (they answer with no validators, as plain.test)
SITEMAPS = {
    "honest.test": "the time the page last changed",
    "lying.test": "the time any page of the site last changed, for every page (the site's build time)",
    "frozen.test": "the day the site went up, for every page, whatever changed since; one date in no W3C form",
}


def html(title: str, text: str, links: tuple[str, ...] = (), build: str = "") -> bytes:
    """A documentation page: a title, its main text, links to other pages, and a build banner in a comment (outside
    the main text, as a release's build date is)."""
    anchors = "".join(f'<li><a href="{href}">{href.strip("/") or "home"}</a></li>' for href in links)
    return (f"<!DOCTYPE html><html lang='en'><head><title>{title}</title></head><body><!-- build {build} -->"
            f"<nav><ul>{anchors}</ul></nav><main><h1>{title}</h1><p>{text}</p>"
            f"<p>This page documents {title.lower()} in full, with the examples that go with it.</p></main>"
            "</body></html>").encode()


class ChangingWeb:
    """The pages of every host by path: (status, body, Location); ``version`` stamps Last-Modified."""

    def __init__(self) -> None:
        self.pages: dict[tuple[str, str], tuple[int, bytes, str | None]] = {}
        self.changed_at: dict[tuple[str, str], float] = {}
        self.changed_wall: dict[tuple[str, str], float] = {}  # when a page last changed, by the clock
        self.with_sitemap: dict[str, list[tuple[str, bytes]]] = {}  # host -> pages it changes when its sitemap is asked
        self.version = 1
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()

    def put(self, url: str, body: bytes, status: int = 200, location: str | None = None) -> None:
        host, path = url.removeprefix("http://").split("/", 1)
        key = (host, "/" + path)
        if self.pages.get(key) != (status, body, location):
            self.changed_at[key] = 1_700_000_000 + 86_400 * self.version
            self.changed_wall[key] = time.time()
        self.pages[key] = (status, body, location)

    def publish_with_sitemap(self, url: str, body: bytes) -> None:
        """Change ``url`` when its host's sitemap is next asked: after the pages of a crawler's visit, which reads a
        host's sitemaps last."""
        self.with_sitemap.setdefault(url.removeprefix("http://").split("/", 1)[0], []).append((url, body))

    def sitemap(self, host: str) -> bytes:
        """The /sitemap.xml of ``host`` (one of ``SITEMAPS``): its pages, each with the <lastmod> its way gives."""
        for url, body in self.with_sitemap.pop(host, []):
            self.put(url, body)
        entries = []
        for (h, path), (status, _, _) in sorted(self.pages.items()):
            if h != host or status != 200:
                continue
            if host == "honest.test":
                lastmod = datetime.fromtimestamp(self.changed_wall[(h, path)], UTC).isoformat(timespec="microseconds")
            elif host == "lying.test":
                last = max(t for (other, _), t in self.changed_wall.items() if other == host)
                lastmod = datetime.fromtimestamp(last, UTC).isoformat(timespec="microseconds")
            else:
                lastmod = "15/11/2023" if path == "/d" else "2023-11-15"
            entries.append(f"<url><loc>http://{host}{path}</loc><lastmod>{lastmod}</lastmod>"
                           "<changefreq>hourly</changefreq><priority>0.8</priority></url>")
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                + "".join(entries) + "</urlset>").encode()

    def sent(self, url: str) -> list[dict[str, str]]:
        """The headers of each request for ``url``, in order."""
        host, path = url.removeprefix("http://").split("/", 1)
        return [h for rh, rp, h in self.requests if (rh, rp) == (host, "/" + path)]

    def answer(self, host: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        with self.lock:
            self.requests.append((host, path, headers))
            if host in SITEMAPS and path == "/sitemap.xml":
                return 200, {"Content-Type": "application/xml"}, self.sitemap(host)
            status, body, location = self.pages.get((host, path), (404, b"not found", None))
            changed = self.changed_at.get((host, path), 0)
        out = {"Content-Type": "text/html; charset=utf-8"} if status == 200 else {}
        if location:
            out["Location"] = location
        if status != 200 or host == "plain.test" or host in SITEMAPS:
            return status, out, body
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        modified = SAME_DATE if host in ("samedate.test", "stale.test") else formatdate(changed, usegmt=True)
        out.update({"ETag": etag} if host in ("etag.test", "ignores.test") else {})
        out.update({"Last-Modified": modified} if host != "etag.test" else {})
        if host == "etag.test" and headers.get("if-none-match") == etag or \
                host in ("lastmod.test", "stale.test") and headers.get("if-modified-since") == modified:
            return 304, {k: v for k, v in out.items() if k != "Content-Type"}, b""
        return 200, out, body


@contextmanager
def serve(web: ChangingWeb) -> Iterator[int]:
    """Serve ``web`` on a loopback port (HTTP/1.1, kept-alive connections) while the block runs; yields the port."""
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, out, body = web.answer(headers.get("host", "").split(":")[0], self.path, headers)
            self.send_response(status)
            for name, value in out.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
