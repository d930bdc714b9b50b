"""A content-addressed cache of parse results: the same response bytes are parsed once.

A result (page row, links, rejects of ``html_page.parse_record``) is stored under a key made of everything the
parse reads: the record (URL, status, the headers it uses, body, truncation) and a fingerprint of the settings
and code its output depends on (``PARSE_SETTINGS``, the source of the parse, canonicalization and SimHash
modules, the versions of the extraction libraries). Changing any of them changes every key, so nothing stale is
ever read. The cache is one SQLite file (WAL, so parallel simulations share it): readers in parse worker
processes, the parse stage writing what they computed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
import threading
import time
import zlib
from functools import cache
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

from crawlcycle.settings import SECTION_FIELDS, Settings

# Settings whose values change what a response parses into: the parse section, and the token whose robots meta
# tags a page obeys.
PARSE_SETTINGS = (*(f.name for f in SECTION_FIELDS["parse"]), "robots_token")
_CODE = ("crawlcycle.parse.warc_records", "crawlcycle.parse.html_page", "crawlcycle.contracts.canonical",
         "crawlcycle.parse.simhash")
_LIBRARIES = ("trafilatura", "lxml", "htmldate", "justext", "resiliparse")


@cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for name in _CODE:
        digest.update(Path(find_spec(name).origin).read_bytes())
    for lib in _LIBRARIES:
        digest.update(f"{lib}={version(lib)}".encode())
    return digest.hexdigest()


def fingerprint(settings: Settings) -> str:
    """What, besides the record, a parse result depends on."""
    values = {name: getattr(settings, name) for name in PARSE_SETTINGS}
    return hashlib.sha256(json.dumps([values, _code_digest()], sort_keys=True).encode()).hexdigest()


def record_key(record: tuple, fingerprint_: str) -> bytes:
    """The key of one parse record ``(url, status, content type, X-Robots-Tag, Content-Language, Link, body,
    truncated)`` under a settings fingerprint."""
    url, status, content_type, x_robots, language, link, body, truncated = record
    digest = hashlib.sha256(fingerprint_.encode())
    for part in (url, str(status), content_type, x_robots, language, link, str(truncated)):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(body)
    return digest.digest()


class ParseCache:
    """One cache file, open for the life of the process (threads share it, one at a time)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.con = sqlite3.connect(path, timeout=120, isolation_level=None, check_same_thread=False)
        # Switching a new file to WAL takes an exclusive lock that SQLite does not wait for (no busy handler),
        # so processes opening the same new cache at once retry it; the mode then persists in the file.
        for attempt in itertools.count():
            try:
                if self.con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self.con.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if attempt >= 200:
                    raise
                time.sleep(0.05)
        self.con.execute("CREATE TABLE IF NOT EXISTS parses (key BLOB PRIMARY KEY, result BLOB NOT NULL)")

    def get(self, key: bytes) -> tuple[dict, list, list] | None:
        with self._lock:
            row = self.con.execute("SELECT result FROM parses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        page, links, rejects = json.loads(zlib.decompress(row[0]))
        return page, [tuple(r) for r in links], [tuple(r) for r in rejects]

    def put(self, entries: list[tuple[bytes, tuple[dict, list, list]]]) -> None:
        rows = [(key, zlib.compress(json.dumps(result).encode(), 1)) for key, result in entries]
        with self._lock:
            self.con.execute("BEGIN")
            self.con.executemany("INSERT OR IGNORE INTO parses VALUES (?, ?)", rows)
            self.con.execute("COMMIT")


@cache
def open_cache(path: str) -> ParseCache:
    """This process's connection to the cache at ``path``."""
    return ParseCache(path)
