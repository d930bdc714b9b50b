"""Reading sitemap files (sitemaps.org protocol): a ``urlset`` lists page URLs, a ``sitemapindex`` lists
more sitemaps; a plain-text sitemap lists one URL per line. Files may come gzipped. A page's ``<lastmod>`` is kept
(``changefreq`` and ``priority`` are not read: search engines ignore them), in UTC; a value not in a W3C Datetime form
is left out and counted.

Reading never raises on bad input: what could be read is returned with the reason the rest could not.
XML is read without entities, DTDs or network access, and decompression stops at ``max_bytes``.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from lxml import etree

from crawlcycle.contracts.fetch_errors import ErrorClass

_GZIP_MAGIC = b"\x1f\x8b"
# The W3C Datetime forms (https://www.w3.org/TR/NOTE-datetime): YYYY, YYYY-MM, YYYY-MM-DD, and a time to the minute,
# second or fraction of one, which must say its zone (Z or +hh:mm / -hh:mm).
_W3C_DATETIME = re.compile(r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?"
                           r"(?:Z|([+-])(\d\d):(\d\d)))?)?)?", re.ASCII)


@dataclass
class Sitemap:
    kind: str | None                  # urlset | sitemapindex | text; None when unreadable
    locs: list[str] = field(default_factory=list)
    reason: str | None = None         # why it was not read whole
    lastmods: list[datetime | None] = field(default_factory=list)  # per loc: a page's <lastmod>, naive UTC
    bad_lastmods: int = 0             # <lastmod> values of pages in no W3C Datetime form, left out


def w3c_datetime(text: str) -> datetime | None:
    """The W3C Datetime ``text`` as a naive UTC datetime (a date alone: its start, in UTC), None if it is none."""
    m = _W3C_DATETIME.fullmatch(text.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, sign, zone_h, zone_m = m.groups()
    try:
        local = datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                         int(second or 0), int((fraction or "")[:6].ljust(6, "0")))
        if not sign:
            return local
        if int(zone_h) > 23 or int(zone_m) > 59:
            return None
        return local - (timedelta(hours=int(zone_h), minutes=int(zone_m)) * (1 if sign == "+" else -1))
    except (ValueError, OverflowError):  # a month 13, a 30 February, a zone past year 1 or 9999
        return None


def _gunzip(body: bytes, max_bytes: int) -> tuple[bytes, str | None]:
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decoder.decompress(body, max_bytes + 1)
    except zlib.error as e:
        return b"", f"bad_gzip: {e}"
    if len(out) > max_bytes:
        return out[:max_bytes], ErrorClass.TOO_LARGE
    return out, None


def read_sitemap(body: bytes, max_bytes: int, truncated: bool = False) -> Sitemap:
    """The entries of one sitemap file (``truncated``: the body was cut at the size limit)."""
    reason = ErrorClass.TOO_LARGE if truncated else None
    if body.startswith(_GZIP_MAGIC):
        body, reason = _gunzip(body, max_bytes)
        if reason and reason != ErrorClass.TOO_LARGE:
            return Sitemap(None, reason=reason)
    text_start = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text_start:
        return Sitemap(None, reason="empty")
    if not text_start.startswith(b"<"):
        lines = text_start.decode("utf-8", "replace").splitlines()
        if reason:  # a cut-off last line is a cut-off URL
            lines = lines[:-1]
        locs = [line.strip() for line in lines if line.strip().lower().startswith(("http://", "https://"))]
        return Sitemap("text", locs, reason or (None if locs else "not_a_sitemap"), [None] * len(locs))
    return _read_xml(body, reason)


def _read_xml(body: bytes, reason: str | None) -> Sitemap:
    kind: str | None = None
    out = Sitemap(None)
    entry = 0  # the index in out.locs of the <url> read now: its <lastmod> may come before or after its <loc>
    lastmod: datetime | None = None
    events = etree.iterparse(io.BytesIO(body), events=("start", "end"), resolve_entities=False, no_network=True,
                             load_dtd=False, huge_tree=False)
    try:
        for event, el in events:
            name = etree.QName(el).localname if isinstance(el.tag, str) else ""
            if event == "start":
                if kind is None:
                    kind = name
                    if kind not in ("urlset", "sitemapindex"):
                        return Sitemap(None, reason=f"not_a_sitemap: root <{kind}>")
                if name in ("url", "sitemap"):
                    entry, lastmod = len(out.locs), None
                continue
            parent = el.getparent()
            within = etree.QName(parent).localname if parent is not None else ""  # not image:loc and the like
            if name == "loc" and el.text and el.text.strip() and within in ("url", "sitemap"):
                out.locs.append(el.text.strip())
                out.lastmods.append(lastmod)
            elif name == "lastmod" and within == "url":
                lastmod = w3c_datetime(el.text or "")
                out.bad_lastmods += lastmod is None
                if len(out.locs) > entry:
                    out.lastmods[entry] = lastmod
            if name in ("url", "sitemap"):
                el.clear()  # keep memory flat on big files
    except etree.XMLSyntaxError as e:
        # What came before the error stands; a body cut at the limit ends in such an error.
        reason = reason or f"malformed_xml: {str(e).splitlines()[0][:120]}"
    out.kind, out.reason = kind, reason
    return out
