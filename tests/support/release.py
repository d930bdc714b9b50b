"""A next release of a real WARC snapshot, for crawls that re-fetch pages: the HTML pages of some hosts rewritten as a
documentation release rewrites them (a paragraph added to each, its validators new), every other record as it was."""

from __future__ import annotations

import hashlib
import io
import re
from email.utils import formatdate
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

RELEASED = 1_750_000_000  # the release's Last-Modified (2025-06-15), after any date of the snapshot's pages
_HEADING_END = re.compile(rb"</h1>", re.IGNORECASE)


def next_release(snapshot: Path, hosts: tuple[str, ...], path: Path) -> tuple[Path, int]:
    """``snapshot`` with the HTML pages of ``hosts`` changed: a paragraph after each page's first heading (a page
    without one is left as it was), a new ``Last-Modified`` and ``ETag``; written to ``path``. Returns the path and
    the pages changed."""
    changed = 0
    with snapshot.open("rb") as f, path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for rec in ArchiveIterator(f):
            uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
            head = rec.http_headers
            body = rec.content_stream().read()
            host = uri.split("/")[2] if "://" in uri else ""
            html = head is not None and "html" in (head.get_header("Content-Type") or "")
            if rec.rec_type == "response" and html and host in hosts and _HEADING_END.search(body):
                note = (b"</h1><p>Changed in this release: the behaviour described on this page was revised, "
                        b"with new defaults, deprecations and the examples updated to match.</p>")
                body = _HEADING_END.sub(note, body, count=1)
                changed += 1
                headers = [(k, v) for k, v in head.headers
                           if k.lower() not in ("content-length", "etag", "last-modified")]
                headers += [("Content-Length", str(len(body))), ("Last-Modified", formatdate(RELEASED, usegmt=True)),
                            ("ETag", '"' + hashlib.sha1(body).hexdigest()[:16] + '"')]
                head = StatusAndHeaders(head.statusline, headers, protocol=head.protocol)
            if rec.rec_type == "response":
                writer.write_record(writer.create_warc_record(
                    uri, "response", payload=io.BytesIO(body), http_headers=head,
                    warc_headers_dict={"WARC-Date": rec.rec_headers.get_header("WARC-Date")}))
    return path, changed
