"""URL canonicalization: the one function every URL passes before it enters the crawl state.

``canonicalize`` resolves a link against its page (RFC 3986 section 5.2 with the WHATWG leniencies
browsers apply to http(s): backslashes are slashes, extra slashes after the scheme are ignored,
``http:foo`` is relative to an http base), then normalises:

- scheme and host lower-case; IDN hosts to punycode (UTS 46); one trailing dot of the host dropped;
  numeric IPv4 forms (``0x7f.1``) and IPv6 literals written in their standard form;
- user name and password dropped (a crawler never sends credentials taken from a link);
- default port (80 for http, 443 for https) dropped; empty path becomes ``/``;
- percent-encoding: escapes of unreserved characters decoded, other escapes upper-cased, characters
  outside RFC 3986 encoded as UTF-8 (a lone ``%`` becomes ``%25``); ``+`` and ``%20`` stay distinct;
- dot segments removed (RFC 3986 section 5.2.4, after ``%2E`` is decoded); the fragment dropped;
- optional rules from ``Settings``: drop empty query parts and a bare ``?``, strip session and tracking
  parameters (query names in ``SESSION_PARAMS`` or starting ``utm_``, and ``;jsessionid=``-style path
  parameters), sort query parameters by name (stable: repeated names keep their order), drop default
  index pages (``INDEX_PAGES``).

Filters raise ``UrlRejected`` with a short reason: ``empty``, ``malformed`` (e.g. a relative URL without
base), ``bad_scheme`` (not http/https), ``bad_host``, ``bad_port``, ``binary_extension``
(``BINARY_EXTENSIONS``), ``too_many_segments``, ``repeated_segment`` (spider traps), ``too_long``.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TextIO
from urllib.parse import unquote_to_bytes, urlsplit

import idna


@dataclass(frozen=True)
class UrlRules:
    """The rules of the canonical form a user may change; ``Settings`` has a field of each, with these defaults,
    and gives them as ``settings.url_rules``."""
    max_url_length: int = 256
    sort_query_params: bool = True
    drop_empty_query: bool = True
    strip_session_params: bool = True
    drop_index_pages: bool = False
    max_path_segments: int = 16
    max_segment_repeats: int = 3


# Files a text crawler never parses: images, audio/video, archives and packages, executables, office
# documents, fonts, and page assets (style sheets, scripts, source maps, WebAssembly).
BINARY_EXTENSIONS = frozenset("""
    png jpg jpeg gif bmp ico svg svgz webp avif tif tiff psd heic
    mp3 m4a aac ogg oga opus wav flac mid midi mp4 m4v mov avi wmv flv webm mkv mpg mpeg ogv 3gp
    zip gz tgz bz2 xz zst 7z rar tar jar war ear deb rpm apk dmg iso img msi cab
    exe dll so bin class pyc o a
    pdf ps eps doc docx xls xlsx ppt pptx odt ods odp rtf epub mobi
    woff woff2 ttf otf eot
    css js mjs map wasm swf
""".split())
# Query parameter names (compared lower-case) that identify a visit or a campaign, not a resource.
SESSION_PARAMS = frozenset("""
    sessionid session_id sid jsessionid phpsessid aspsessionid cfid cftoken
    gclid dclid fbclid msclkid mc_cid mc_eid yclid _ga _gl
""".split())
INDEX_PAGES = ("index.html", "index.htm", "index.shtml", "index.php", "index.asp", "index.aspx",
               "index.jsp", "index.cfm", "default.asp", "default.aspx", "default.htm", "default.html")
DEFAULT_PORTS = {"http": "80", "https": "443"}

_DEFAULT_RULES = UrlRules()
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PATH_CHARS = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
_PATH_OK = re.compile(f"[{_PATH_CHARS}]*").fullmatch
# the query encodes "'" as browsers do for http(s), so a link and its fetched URL agree
_QUERY_CHARS = r"A-Za-z0-9\-._~!$&()*+,;=:@/?"
_QUERY_OK = re.compile(f"[{_QUERY_CHARS}]*").fullmatch
# an escape, or one character that must be encoded (a '%' not starting an escape included)
_PATH_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_CHARS}]")
_QUERY_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_QUERY_CHARS}]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_HOST_OK = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*").fullmatch
_IPV4_PART = re.compile(r"0[xX][0-9A-Fa-f]*|[0-9]+").fullmatch
_SESSION_PATH = re.compile(r";(?:jsessionid|phpsessid|sessionid|sid)=[^/;]*", re.IGNORECASE)
_INDEX_PAGE = re.compile("/(?:" + "|".join(re.escape(p) for p in INDEX_PAGES) + ")$", re.IGNORECASE)
_STRIP = "".join(map(chr, range(0x21)))  # C0 controls and space, trimmed from both ends


BAD_SCHEME = "bad_scheme"  # the reason for a URL neither http nor https (a redirect to one: that error class)


class UrlRejected(ValueError):
    """A URL the crawl does not admit; ``reason`` is a short snake_case word."""

    def __init__(self, reason: str, url: str = "") -> None:
        super().__init__(f"{reason}: {url[:200]}")
        self.reason = reason


def _encode_char(m: re.Match) -> str:
    s = m.group()
    if len(s) == 3:  # an escape
        c = chr(int(s[1:], 16))
        return c if c in _UNRESERVED else s.upper()
    try:
        return "".join(f"%{b:02X}" for b in s.encode("utf-8"))
    except UnicodeEncodeError:  # lone surrogate
        return "%EF%BF%BD"


def _fix_path(path: str) -> str:
    return path if _PATH_OK(path) else _PATH_FIX.sub(_encode_char, path)


def _fix_query(query: str) -> str:
    return query if _QUERY_OK(query) else _QUERY_FIX.sub(_encode_char, query)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for a path starting with '/'."""
    if "/." not in path:
        return path
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def _ipv4(host: str) -> str | None:
    """The dotted-decimal form if ``host`` is an IPv4 address in any WHATWG-accepted notation."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not _IPV4_PART(parts[-1]):
        return None
    if len(parts) > 4:
        raise UrlRejected("bad_host", host)
    nums = []
    for p in parts:
        if not _IPV4_PART(p):
            raise UrlRejected("bad_host", host)
        if p[:2] in ("0x", "0X"):
            nums.append(int(p[2:] or "0", 16))
        elif len(p) > 1 and p[0] == "0":
            if any(c in "89" for c in p):
                raise UrlRejected("bad_host", host)
            nums.append(int(p, 8))
        else:
            nums.append(int(p))
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        raise UrlRejected("bad_host", host)
    value = nums[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(nums[:-1]))
    return str(ipaddress.IPv4Address(value))


@lru_cache(maxsize=4096)
def _host(raw: str) -> str:
    """Canonical host (no port, no user info) or UrlRejected('bad_host')."""
    if raw.startswith("["):
        if not raw.endswith("]") or "%" in raw:  # no zone ids
            raise UrlRejected("bad_host", raw)
        try:
            return f"[{ipaddress.IPv6Address(raw[1:-1]).compressed}]"
        except ValueError:
            raise UrlRejected("bad_host", raw) from None
    host = raw
    if "%" in host:
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError:
            raise UrlRejected("bad_host", raw) from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise UrlRejected("bad_host", raw) from None
    ip = _ipv4(host)
    if ip:
        return ip
    if not _HOST_OK(host):
        raise UrlRejected("bad_host", raw)
    if "xn--" in host:  # punycode labels must decode
        try:
            idna.decode(host)
        except (idna.IDNAError, UnicodeError, ValueError):
            raise UrlRejected("bad_host", raw) from None
    return host


def _authority(scheme: str, authority: str) -> str:
    host = authority.rpartition("@")[2]
    port = ""
    colon = host.rfind(":")
    if colon > host.rfind("]"):
        host, port = host[:colon], host[colon + 1:]
        if port and not (port.isascii() and port.isdigit() and int(port) <= 65535):
            raise UrlRejected("bad_port", authority)
        port = str(int(port)) if port else ""
    if not host:
        raise UrlRejected("bad_host", authority)
    host = _host(host)
    return host if not port or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"


def _split(url: str, base: tuple[str, str, str, str] | None) -> tuple[str, str, str, str]:
    """(scheme, netloc, path, query) of ``url`` resolved against ``base``, normalised, unfiltered."""
    url = url.strip(_STRIP)
    if "\t" in url or "\n" in url or "\r" in url:
        url = url.replace("\t", "").replace("\n", "").replace("\r", "")
    url = url.partition("#")[0]
    head, qmark, query = url.partition("?")
    head = head.replace("\\", "/")
    m = _SCHEME.match(head)
    if m:
        scheme = m.group(1).lower()
        if scheme not in DEFAULT_PORTS:
            raise UrlRejected(BAD_SCHEME, url)
        head = head[m.end():]
        if base is not None and base[0] == scheme and not head.startswith("//"):
            m = None  # 'http:foo' against an http base is relative
    if m:
        netloc_path = head.lstrip("/")
        authority, slash, path = netloc_path.partition("/")
        netloc, path = _authority(scheme, authority), slash + path
    elif base is None:
        raise UrlRejected("malformed", url)
    else:
        scheme, netloc, base_path, base_query = base
        if head.startswith("//"):
            authority, slash, path = head.lstrip("/").partition("/")
            netloc, path = _authority(scheme, authority), slash + path
        elif head.startswith("/"):
            path = head
        elif head:
            path = base_path[: base_path.rfind("/") + 1] + head
        else:
            path = base_path
            if not qmark:
                qmark, query = ("?", base_query) if base_query is not None else ("", "")
    path = _remove_dot_segments(_fix_path(path)) if path else "/"
    return scheme, netloc, path, (_fix_query(query) if qmark else None)


@lru_cache(maxsize=1024)
def _base(base: str) -> tuple[str, str, str, str]:
    return _split(base, None)


def canonicalize(url: str, base: str | None = None, rules: UrlRules | None = None,
                 binary_ok: bool = False) -> str:
    """The canonical form of ``url`` (resolved against ``base`` if relative), or ``UrlRejected``.
    ``binary_ok`` lets through file names the page filter refuses (a sitemap may be ``.xml.gz``)."""
    s = rules or _DEFAULT_RULES
    if not url.strip(_STRIP) and base is None:
        raise UrlRejected("empty", url)
    if len(url) > 8 * s.max_url_length:  # not worth parsing; could not shrink below the limit
        raise UrlRejected("too_long", url)
    scheme, netloc, path, query = _split(url, _base(base) if base else None)

    if s.strip_session_params and ";" in path:
        path = _remove_dot_segments(_SESSION_PATH.sub("", path))  # '/.;sid=1/' leaves a dot segment
    if s.drop_index_pages and "." in path:
        path = _INDEX_PAGE.sub("/", path)
    last = path[path.rfind("/") + 1:].partition(";")[0]
    dot = last.rfind(".")
    if dot >= 0 and last[dot + 1:].lower() in BINARY_EXTENSIONS and not binary_ok:
        raise UrlRejected("binary_extension", url)
    segments = [seg for seg in path.split("/") if seg]
    if len(segments) > s.max_path_segments:
        raise UrlRejected("too_many_segments", url)
    if len(segments) >= s.max_segment_repeats and \
            Counter(segments).most_common(1)[0][1] >= s.max_segment_repeats:
        raise UrlRejected("repeated_segment", url)

    if query is not None:
        params = query.split("&")
        if s.drop_empty_query:
            params = [p for p in params if p]
        if s.strip_session_params:
            params = [p for p in params if not _is_session_param(p.partition("=")[0])]
        if s.sort_query_params:
            params.sort(key=lambda p: p.partition("=")[0])
        query = "&".join(params)
        if not query and s.drop_empty_query:
            query = None
    out = f"{scheme}://{netloc}{path}" if query is None else f"{scheme}://{netloc}{path}?{query}"
    if len(out) > s.max_url_length:
        raise UrlRejected("too_long", url)
    return out


def _is_session_param(name: str) -> bool:
    name = name.lower()
    return name.startswith("utm_") or name in SESSION_PARAMS


def host_of(url: str) -> str:
    """Host of an absolute URL, lower-case, without port ('' if it has none)."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return ""


def canonicalize_many(lines: Iterable[str], rules: UrlRules | None = None
                      ) -> Iterator[tuple[str, str | None]]:
    """Per input line ``URL`` or ``URL<TAB>BASE``: (canonical URL, None) or (input URL, reason)."""
    for line in lines:
        url, _, base = line.rstrip("\r\n").partition("\t")
        try:
            yield canonicalize(url, base or None, rules), None
        except UrlRejected as e:
            yield url, e.reason


def canon_main(stdin: TextIO, stdout: TextIO, rules: UrlRules | None = None) -> int:
    """`crawlcycle canon`: one output line per input line, the canonical URL or ``-<TAB>reason``."""
    for result, reason in canonicalize_many(stdin, rules):
        stdout.write(f"-\t{reason}\n" if reason else f"{result}\n")
    return 0
