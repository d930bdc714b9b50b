"""The WARC file of a shard's fetch (``shard_files.WARC``).

A ``warcinfo`` record (what wrote the file and under which rules), then a request record for every request sent
and a response record for every response read (robots.txt and sitemaps included), each with ``WARC-IP-Address``.
Bodies are stored decoded (no transfer or content coding), the original ``Content-Encoding``/
``Transfer-Encoding``/``Content-Length`` headers renamed ``X-Crawler-*`` (by ``http_client``); a body cut at its
size limit carries ``WARC-Truncated``. The file is written whole and renamed into place.

An answer that repeats the stored copy of a page fetched again is a ``revisit`` record instead of a response (WARC
1.1, section 6.7): a 304 to the conditional request has the profile ``server-not-modified``, a 2xx whose payload
digest is the stored copy's ``identical-payload-digest`` (the digest written, the payload left out). Both keep the
answer's HTTP head and refer to the stored copy's record (``WARC-Refers-To-Target-URI``, ``WARC-Refers-To-Date``).
"""

from __future__ import annotations

import io
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import BinaryIO

from warcio.warcwriter import WARCWriter

from crawlcycle.contracts import shard_files
from crawlcycle.fetch.http_client import Exchange
from crawlcycle.settings import Settings

_CONTACT = re.compile(r"https?://[^\s;)]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PROFILE = "http://netpreserve.org/warc/1.1/revisit/"
NOT_MODIFIED, IDENTICAL = "server-not-modified", "identical-payload-digest"


class WarcOutput:
    """Writes the records of the exchanges of one fetch call; not thread-safe (the caller holds a lock)."""

    def __init__(self, file: BinaryIO, filename: str, settings: Settings) -> None:
        self._warc = WARCWriter(file, gzip=True, warc_version="1.1")
        self._warc.write_record(self._warc.create_warcinfo_record(filename, warcinfo(settings)))

    def write(self, ex: Exchange) -> None:
        """The request record of a request sent and, when a response was read, its response or revisit record."""
        common = {"WARC-Date": _warc_date(ex.started), "WARC-IP-Address": ex.ip or ""}
        request = self._warc.create_warc_record(ex.url, "request", payload=io.BytesIO(), length=0,
                                                http_headers=ex.request, warc_headers_dict=dict(common))
        self._warc.write_record(request)
        if not ex.head:
            return
        headers = dict(common, **{"WARC-Concurrent-To": request.rec_headers["WARC-Record-ID"]})
        profile = revisit_profile(ex)
        if profile:
            headers.update({"WARC-Profile": _PROFILE + profile, "WARC-Refers-To-Target-URI": ex.url})
            if ex.stored.fetched_at is not None:  # type: ignore[union-attr]
                headers["WARC-Refers-To-Date"] = _warc_date(ex.stored.fetched_at)  # type: ignore[union-attr]
            if profile == IDENTICAL:
                headers["WARC-Payload-Digest"] = ex.payload_digest
            self._warc.write_record(self._warc.create_warc_record(ex.url, "revisit", http_headers=ex.head,
                                                                  warc_headers_dict=headers))
            return
        if ex.truncated:
            headers["WARC-Truncated"] = "length"
        self._warc.write_record(self._warc.create_warc_record(
            ex.url, "response", payload=io.BytesIO(ex.body), length=len(ex.body), http_headers=ex.head,
            warc_headers_dict=headers))


def revisit_profile(ex: Exchange) -> str | None:
    """The revisit profile of an answer that repeats the stored copy it was asked against, else None."""
    if ex.not_modified:
        return NOT_MODIFIED
    stored = ex.stored
    if stored and stored.payload_digest and 200 <= (ex.status or 0) < 300 and not ex.truncated \
            and ex.payload_digest == stored.payload_digest:
        return IDENTICAL
    return None


@contextmanager
def warc_output(path: Path, settings: Settings) -> Iterator[WarcOutput]:
    """The WARC file at ``path``, in place once the block succeeds (none on failure)."""
    with shard_files.replacing(path) as tmp, open(tmp, "wb") as file:
        yield WarcOutput(file, path.name, settings)


def warcinfo(settings: Settings) -> dict[str, str]:
    """The warcinfo fields that tell an archivist what wrote the file and under which rules."""
    contact = _CONTACT.search(settings.user_agent)
    return {
        "software": f"crawlcycle/{version('crawlcycle')} (warcio/{version('warcio')})",
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
        "http-header-user-agent": settings.user_agent,
        "robots": "obey (RFC 9309, token " + settings.robots_token + ")"
                  + ("" if settings.obey_crawl_delay else "; Crawl-delay not obeyed"),
        "operator": contact[0] if contact else settings.user_agent,
        "hostname": socket.gethostname(),
    }


def _warc_date(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
