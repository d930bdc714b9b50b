"""Reading sitemap files (sitemaps.org protocol): a ``urlset`` lists page URLs, a ``sitemapindex`` lists
more sitemaps; a plain-text sitemap lists one URL per line. Files may come gzipped.

Reading never raises on bad input: what could be read is returned with the reason the rest could not.
XML is read without entities, DTDs or network access, and decompression stops at ``max_bytes``.
"""

from __future__ import annotations

import io
import zlib
from dataclasses import dataclass, field

from lxml import etree

_GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class Sitemap:
    kind: str | None                  # urlset | sitemapindex | text; None when unreadable
    locs: list[str] = field(default_factory=list)
    reason: str | None = None         # why it was not read whole


def _gunzip(body: bytes, max_bytes: int) -> tuple[bytes, str | None]:
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = decoder.decompress(body, max_bytes + 1)
    except zlib.error as e:
        return b"", f"bad_gzip: {e}"
    if len(out) > max_bytes:
        return out[:max_bytes], "too_large"
    return out, None


def read_sitemap(body: bytes, max_bytes: int, truncated: bool = False) -> Sitemap:
    """The entries of one sitemap file (``truncated``: the body was cut at the size limit)."""
    reason = "too_large" if truncated else None
    if body.startswith(_GZIP_MAGIC):
        body, reason = _gunzip(body, max_bytes)
        if reason and reason != "too_large":
            return Sitemap(None, reason=reason)
    text_start = body.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text_start:
        return Sitemap(None, reason="empty")
    if not text_start.startswith(b"<"):
        lines = text_start.decode("utf-8", "replace").splitlines()
        if reason:  # a cut-off last line is a cut-off URL
            lines = lines[:-1]
        locs = [line.strip() for line in lines if line.strip().lower().startswith(("http://", "https://"))]
        return Sitemap("text", locs, reason or (None if locs else "not_a_sitemap"))
    return _read_xml(body, reason)


def _read_xml(body: bytes, reason: str | None) -> Sitemap:
    kind: str | None = None
    locs: list[str] = []
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
                continue
            parent = el.getparent()
            if name == "loc" and el.text and el.text.strip() and parent is not None and \
                    etree.QName(parent).localname in ("url", "sitemap"):  # not image:loc and the like
                locs.append(el.text.strip())
            if name in ("url", "sitemap"):
                el.clear()  # keep memory flat on big files
    except etree.XMLSyntaxError as e:
        # What came before the error stands; a body cut at the limit ends in such an error.
        return Sitemap(kind, locs, reason or f"malformed_xml: {str(e).splitlines()[0][:120]}")
    return Sitemap(kind, locs, reason)
