"""One HTML response of the parse stage to its page row, out-links and rejected links (``parse_record``).

``reason`` names the first problem found, in this order:

- ``bad_url``: the record's URL does not pass canonicalization (row keeps the raw URL);
- ``empty_body``; ``not_html`` (content type, or sniffed when missing);
- ``malformed``: the HTML cannot be parsed or extracted at all;
- ``decode_error``: the declared charset (BOM, HTTP header or ``<meta>``) is unknown or wrong for the
  bytes; the text comes from the first charset that decodes (UTF-8, then windows-1252);
- ``truncated``: the body was cut (``WARC-Truncated``, the fetch log, or ``max_body_bytes`` here);
- ``noindex``: robots meta tag or ``X-Robots-Tag`` says noindex: text is not kept;
- ``no_text``: no main text found.

``canonical_link`` is the one URL the response names as its canonical: ``Link: <...>; rel="canonical"`` headers
(resolved against the URL, any content type) and ``<link rel=canonical href>`` in the document's head (resolved
against its base), canonicalized; null when it names none, or several different ones. ``date`` is the page's
date (publication, else last change; ``YYYY-MM-DD``): trafilatura's whole date search with the ``trafilatura``
extractor, else only what the document declares for machines (``<meta>`` date tags, JSON-LD), by htmldate's rules.

``content_hash`` is the SHA-1 of the main text (case-folded, whitespace collapsed), else of the body;
``simhash`` the SimHash of the main text. ``links.parquet`` holds distinct (dst, anchor) pairs per page from
``<a href>`` and ``<area href>``, resolved against ``<base href>``, at most ``max_outlinks_per_page``, self-links
left out; ``anchor`` is the link text plus the alt text of its images, ``context`` the anchor with up to
``CONTEXT_WORDS`` words of text on each side, ``nofollow`` from ``rel`` nofollow/ugc/sponsored. Pages with robots
nofollow emit no links (their ``n_links`` still counts them). Links that fail canonicalization go to
``rejects.parquet``.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import re

import lxml.html
from htmldate.core import examine_header
from htmldate.extractors import json_search
from htmldate.utils import Extractor as DateRules
from htmldate.validators import get_max_date, get_min_date
from lxml import etree
from lxml.etree import ParserError
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree
from trafilatura import bare_extraction
from trafilatura.metadata import examine_meta, extract_meta_json, extract_title

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import UrlRejected, UrlRules, canonicalize
from crawlcycle.parse.simhash import simhash
from crawlcycle.settings import Settings

REASONS = ("bad_url", "empty_body", "not_html", "malformed", "decode_error", "truncated", "noindex", "no_text")

HTML_TYPES = ("text/html", "application/xhtml+xml")
CONTEXT_WORDS = 6        # words kept on each side of an anchor
MAX_ANCHOR_CHARS = 500
MAX_RAW_CHARS = 2000     # rejected hrefs are stored cut to this

# Extraction failures are recorded per page as reasons; the libraries' own log lines add nothing.
for _name in ("trafilatura", "htmldate"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

_HTML_PARSER = lxml.html.HTMLParser(remove_comments=True, remove_pis=True)
# Every element as a plain HtmlElement, chosen in C: lxml.html's per-tag class lookup runs Python code each
# time an element is touched, about 7 % of extraction time; nothing here uses its form-element classes.
_HTML_PARSER.set_element_class_lookup(etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity))
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([a-zA-Z0-9_.:\-]+)", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# WHATWG encoding labels: these mean windows-1252 in a browser
_LATIN1_LABELS = {"iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "ascii", "us-ascii", "cp819"}
_SNIFF_HTML = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title")
_NOFOLLOW_RELS = {"nofollow", "ugc", "sponsored"}
_LANG = re.compile(r"[a-zA-Z]{2,3}(?=$|[-_])")
# One link-value of an HTTP Link header (RFC 8288): <target> and its parameters, quoted strings kept whole.
_LINK_VALUE = re.compile(r'<([^>]*)>((?:\s*;\s*[^\s;,=]+\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^\s;,"]*))?)*)')
_LINK_REL = re.compile(r';\s*rel\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;,"]*))', re.IGNORECASE)


def parse_record(url: str, status: int, content_type: str, x_robots: str, content_language: str, link: str,
                 body: bytes, truncated: bool, settings: Settings) -> tuple[dict, list, list]:
    """One response to (page row, link rows, reject rows); every failure becomes a page reason."""
    mime, _, params = content_type.partition(";")
    mime = mime.strip().lower()
    page = dict.fromkeys(shard_files.schema(shard_files.PAGES).names) | {
        "url": url, "status": status, "content_type": mime or None, "n_links": 0, "noindex": False,
        "nofollow": False, "bytes": len(body)}
    blank = not body.strip()
    if not blank:
        page["content_hash"] = hashlib.sha1(body).hexdigest()
    try:
        page["url"] = canonicalize(url, None, settings.url_rules)
    except UrlRejected:
        return _done(page, {"bad_url"}), [], []
    # a Link header names the canonical of any response (a PDF's, say); an HTML page's head may name it too
    declared = _canonicals(_header_canonicals(link), url, settings.url_rules)
    page["canonical_link"] = _only(declared)
    if blank:
        return _done(page, {"empty_body"}), [], []
    if not (mime in HTML_TYPES or not mime and body[:256].lstrip().lower().startswith(_SNIFF_HTML)):
        return _done(page, {"not_html"}), [], []
    header_charset = next((p.split("=", 1)[1].strip(" \"'") for p in params.split(";")
                           if p.strip().lower().startswith("charset=")), None)
    html, charset_wrong = _decode(body, header_charset)
    if "\x00" in html:
        html = html.replace("\x00", "")
    try:
        tree = lxml.html.document_fromstring(_XML_DECLARATION.sub("", html, count=1), parser=_HTML_PARSER)
    except (ParserError, ValueError):
        return _done(page, {"malformed"}), [], []
    found = {"decode_error"} if charset_wrong else set()
    if truncated:
        found.add("truncated")

    # "googlebot: noindex" counts too: obeying another crawler's restriction is the safe side
    directives = {d.rpartition(":")[2].strip() for d in x_robots.lower().split(",")}
    page["noindex"] = bool(directives & {"noindex", "none"})
    page["nofollow"] = bool(directives & {"nofollow", "none"})

    _robots_meta(tree, page, settings.robots_token)
    page["lang"] = _language(tree, content_language)
    base = url
    for el in tree.iter("base"):
        if el.get("href"):
            try:
                base = canonicalize(el.get("href"), url, settings.url_rules)
            except UrlRejected:
                pass
            break
    # only the head's: a <link> in the body may come from what users posted, and search engines ignore it there
    head = tree.find("head")
    hrefs = [el.get("href") for el in (head.iter("link") if head is not None else ())
             if "canonical" in (el.get("rel") or "").lower().split() and el.get("href")]
    page["canonical_link"] = _only(declared | _canonicals(hrefs, base, settings.url_rules))
    links, rejects = _links(tree, page["url"], base, settings)
    page["n_links"] = len(links)
    if page["nofollow"]:
        links, rejects = [], []

    try:
        page["title"], page["description"], page["date"], main_text = _extract(tree, html, page["url"],
                                                                              settings.extractor)
    except Exception:  # a document that breaks the extractor is a page reason, not a crash
        main_text = None
        found.add("malformed")
    main = " ".join((main_text or "").split())
    if main:
        page["content_hash"] = hashlib.sha1(main.casefold().encode()).hexdigest()
        page["simhash"] = simhash(main)
        page["text"] = None if page["noindex"] else main_text
    if page["title"] is None:
        page["title"] = " ".join((tree.findtext(".//title") or "").split()) or None
    if page["noindex"]:
        found.add("noindex")
    elif page["text"] is None:
        found.add("no_text")
    return _done(page, found), links, rejects


def _extract(tree, html: str, url: str, extractor: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(title, description, date, main text) of a page, by the ``extractor`` setting."""
    if extractor == "trafilatura":
        doc = bare_extraction(tree, url=url, fast=True, with_metadata=True)
        return (doc.title, doc.description, doc.date, doc.text) if doc is not None else (None, None, None, None)
    # The fields of trafilatura's metadata pass that pages keep, by its own rules (meta tags, then JSON-LD,
    # then the title element and headings): the same values at a fraction of the pass's cost, most of which
    # is date and author detection.
    head = examine_meta(tree)
    try:
        head = extract_meta_json(tree, head)
    except Exception:  # broken JSON-LD: trafilatura ignores it too
        pass
    head.title = head.title or extract_title(tree)
    head.clean_and_trim()
    if extractor in ("resiliparse", "visible"):
        text = extract_plain_text(HTMLTree.parse(html), main_content=extractor == "resiliparse", links=False,
                                  alt_texts=False, list_bullets=False, comments=False)
    else:
        doc = bare_extraction(tree, url=url, fast=True, include_comments=False)
        text = doc.text if doc is not None else None
    return head.title, head.description, _declared_date(tree), text


def _declared_date(tree) -> str | None:
    """The date a document declares for machines, by htmldate's rules with trafilatura's options (the publication
    date, else the last change): ``<meta>`` date tags, then JSON-LD. Dates in the text, ``<time>`` and ``<abbr>``
    elements are left out: a page holds many (comments, related articles, a "last updated" of the site)."""
    rules = DateRules(extensive=False, max=get_max_date(None), min=get_min_date(None), original=True,
                      format="%Y-%m-%d")
    return examine_header(tree, rules) or json_search(tree, rules)


def _header_canonicals(link: str) -> list[str]:
    """The targets of the ``rel="canonical"`` link-values of a Link header."""
    targets = []
    for value in _LINK_VALUE.finditer(link):
        rel = _LINK_REL.search(value.group(2))
        if rel and "canonical" in (rel.group(1) or rel.group(2) or "").lower().split():
            targets.append(value.group(1))
    return targets


def _canonicals(hrefs: list[str], base: str, rules: UrlRules) -> set[str]:
    """The canonical forms of ``hrefs`` resolved against ``base``; those the crawl refuses are left out."""
    found = set()
    for href in hrefs:
        try:
            found.add(canonicalize(href, base, rules))
        except UrlRejected:
            pass
    return found


def _only(urls: set[str]) -> str | None:
    """The URL, when there is exactly one: declarations that disagree declare nothing (as search engines read
    them)."""
    return next(iter(urls)) if len(urls) == 1 else None


def _done(page: dict, found: set[str]) -> dict:
    page["reason"] = next((r for r in REASONS if r in found), None)
    return page


def _decode(body: bytes, header_charset: str | None) -> tuple[str, bool]:
    """(text, whether a declared charset was unknown or wrong). Order: BOM, HTTP header, <meta>."""
    declared = []
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            body = body[len(bom):]
            declared.append(encoding)
            break
    if header_charset:
        declared.append(header_charset)
    meta = _META_CHARSET.search(body, 0, 4096)
    if meta:
        label = meta.group(1).decode("ascii").lower()
        declared.append("utf-8" if label.startswith(("utf-16", "utf-32")) else label)  # readable as ASCII
    wrong = False
    for label in declared:
        try:
            return body.decode(_codec(label)), wrong
        except (LookupError, UnicodeDecodeError):
            wrong = True
    for encoding in ("utf-8", "cp1252"):
        try:
            return body.decode(encoding), wrong
        except UnicodeDecodeError:
            pass
    return body.decode("utf-8", "replace"), True


def _codec(label: str) -> str:
    label = label.strip().lower()
    return "cp1252" if label in _LATIN1_LABELS else codecs.lookup(label).name


def _robots_meta(tree, page: dict, token: str) -> None:
    for el in tree.iter("meta"):
        if (el.get("name") or "").strip().lower() in ("robots", token):
            directives = {d.strip() for d in (el.get("content") or "").lower().split(",")}
            page["noindex"] |= bool(directives & {"noindex", "none"})
            page["nofollow"] |= bool(directives & {"nofollow", "none"})


def _language(tree, content_language: str) -> str | None:
    candidates = [tree.get("lang"), tree.get("xml:lang")]
    candidates += [el.get("content") for el in tree.iter("meta")
                   if (el.get("http-equiv") or "").lower() == "content-language"]
    for value in (*candidates, content_language):
        m = _LANG.match((value or "").strip().split(",")[0].strip())
        if m:
            return m.group().lower()
    return None


def _links(tree, src: str, base: str, settings: Settings) -> tuple[list[tuple], list[tuple]]:
    cap = settings.max_outlinks_per_page
    links: list[tuple] = []
    rejects: list[tuple] = []
    seen: set[tuple[str, str]] = set()
    for el in tree.iter("a", "area"):
        href = el.get("href")
        if href is None:
            continue
        if len(links) >= cap:  # spider-trap guard: the rest are refused, and recorded as such
            if len(rejects) < cap:
                rejects.append((src, href[:MAX_RAW_CHARS], "too_many_links"))
            continue
        try:
            dst = canonicalize(href, base, settings.url_rules)
        except UrlRejected as e:
            if len(rejects) < cap:
                rejects.append((src, href[:MAX_RAW_CHARS], e.reason))
            continue
        if dst == src:
            continue
        if el.tag == "area":
            anchor = " ".join((el.get("alt") or "").split())
        else:
            alts = [img.get("alt") or "" for img in el.iter("img")]
            anchor = " ".join(" ".join([el.text_content(), *alts]).split())
        anchor = anchor[:MAX_ANCHOR_CHARS]
        if (dst, anchor) in seen:
            continue
        seen.add((dst, anchor))
        prev = el.getprevious()
        parent = el.getparent()
        before = (prev.tail if prev is not None else parent.text if parent is not None else None) or ""
        context = " ".join([*before.split()[-CONTEXT_WORDS:], anchor, *(el.tail or "").split()[:CONTEXT_WORDS]])
        nofollow = bool(_NOFOLLOW_RELS & set((el.get("rel") or "").lower().split()))
        links.append((src, dst, anchor, " ".join(context.split()), nofollow))
    return links, rejects
