"""Parts of a real WARC snapshot, for tests that crawl a few of its sites."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter


def cut(snapshot: Path, prefixes: tuple[str, ...], path: Path) -> Path:
    """The snapshot's response records whose URL starts with one of ``prefixes``, written to ``path``."""
    with snapshot.open("rb") as f, path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for rec in ArchiveIterator(f):
            uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
            if rec.rec_type == "response" and uri.startswith(prefixes):
                writer.write_record(rec)
    return path
