"""A second judge of page impact, independent of the product's parser and ranker.

The simulator's reference ground truth reads pages with our parser and ranks them with our BM25F ranker, so a
policy tuned to those could look better than it is. This judge reads the same WARC records with its own
extraction (lxml, visible ``<body>`` text and ``<title>``) and ranks with ``bm25s`` (plain BM25, English stop
words, Snowball English stemmer). A page's impact is, as in the reference, the summed frequency of the queries
whose top K holds it. Nothing is downloaded: the tokenizer, stop words and stemmer ship with the packages.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

import bm25s
import lxml.html
import polars as pl
import Stemmer
from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.contracts.canonical import UrlRejected, canonicalize
from crawlcycle.settings import Settings

JUDGE = "bm25s"
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_INVISIBLE = ("script", "style", "noscript", "template")
# Elements that break a line when rendered: their text must not run into their neighbours' ("a</p><p>b").
_BLOCKS = frozenset("""address article aside blockquote br caption dd details div dl dt fieldset figcaption figure
    footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table td th tr ul""".split())
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\"';\s]+)", re.I)
_PAGES_SCHEMA = {"url": pl.String, "title": pl.String, "text": pl.String}


def visible_pages(snapshots: list[Path], settings: Settings) -> pl.DataFrame:
    """url, title, text of every 2xx HTML response of ``snapshots`` (first record of a canonical URL wins;
    URLs the canonicalizer rejects are skipped). Unreadable records are skipped, never raised on."""
    rows: dict[str, tuple[str, str]] = {}
    for path in snapshots:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                page = _html_response(rec, settings)
                if page is not None and page[0] not in rows:
                    rows[page[0]] = page[1:]
    return pl.DataFrame([(url, title, text) for url, (title, text) in rows.items()], schema=_PAGES_SCHEMA,
                        orient="row")


def _html_response(rec, settings: Settings) -> tuple[str, str, str] | None:
    """(canonical URL, title, visible text) of a 2xx HTML response record, or None."""
    if rec.rec_type != "response" or rec.http_headers is None:
        return None
    status = rec.http_headers.get_statuscode() or ""
    content_type = rec.http_headers.get_header("Content-Type") or ""
    if not (status.isdigit() and 200 <= int(status) < 300) \
            or content_type.split(";")[0].strip().lower() not in HTML_TYPES:
        return None
    try:
        url = canonicalize((rec.rec_headers.get_header("WARC-Target-URI") or "").strip("<>"), None, settings.url_rules)
        body = rec.content_stream().read()
    except (UrlRejected, ValueError, OSError, EOFError):  # a rejected URL, or a broken chunked/compressed body
        return None
    charset = _CHARSET.search(content_type)
    title, text = visible_text(body, charset.group(1) if charset else None)
    return url, title, text


def visible_text(body: bytes, charset: str | None) -> tuple[str, str]:
    """(title, visible body text) of an HTML document, whitespace collapsed; empty strings when unreadable."""
    try:
        codec = codecs.lookup(charset).name if charset else "utf-8"
    except LookupError:
        codec = "utf-8"
    # lxml refuses str input with an XML encoding declaration: hand it UTF-8 bytes and say so
    data = body.decode(codec, errors="replace").encode("utf-8")
    try:
        tree = lxml.html.document_fromstring(data, parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (etree.ParserError, ValueError):  # empty or whitespace-only document
        return "", ""
    etree.strip_elements(tree, *_INVISIBLE, etree.Comment, etree.ProcessingInstruction, with_tail=False)
    title = " ".join((tree.findtext(".//title") or "").split())
    body_el = tree.find("body")
    if body_el is None:
        return title, ""
    for el in body_el.iter():
        if el.tag in _BLOCKS:
            el.text = " " + (el.text or "")
            el.tail = " " + (el.tail or "")
    return title, " ".join(body_el.text_content().split())


def judge_top_k(pages: pl.DataFrame, workload: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """query, rank, url: each ``workload`` query's (query, frequency) bm25s top ``top_k`` over the title + text of
    ``pages`` (url, title, text), pages that match it only."""
    urls = pages["url"].to_list()
    found: list[tuple[str, int, str]] = []
    queries_text = workload["query"].unique().sort().to_list()
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
    corpus = tokenizer.tokenize([f"{t or ''}\n{x or ''}" for t, x in zip(pages["title"], pages["text"], strict=True)],
                                update_vocab=True, return_as="ids", show_progress=False, allow_empty=False)
    # query words absent from every page are dropped; a query left without words shows no page
    queries = tokenizer.tokenize(queries_text, update_vocab=False, return_as="ids", show_progress=False,
                                 allow_empty=False)
    asked = [i for i, q in enumerate(queries) if q]
    if urls and asked and top_k > 0:
        index = bm25s.BM25()
        index.index(tokenizer.to_tokenized_tuple(corpus), show_progress=False)
        docs, scores = index.retrieve([queries[i] for i in asked], k=min(top_k, len(urls)), show_progress=False)
        for row, i in enumerate(asked):
            shown = docs[row][scores[row] > 0]  # a top K is padded with non-matching pages when fewer than K match
            found += [(queries_text[i], rank, urls[doc]) for rank, doc in enumerate(shown.tolist(), 1)]
    return pl.DataFrame(found, schema={"query": pl.String, "rank": pl.Int64, "url": pl.String}, orient="row")


def judge_impact(pages: pl.DataFrame, workload: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """url, impact for every page of ``pages`` (url, title, text): the summed frequency of the ``workload``
    queries (query, frequency) whose bm25s top ``top_k`` over title + text holds the page; 0 for the rest."""
    return impact_of(pages["url"], judge_top_k(pages, workload, top_k), workload)


def impact_of(urls: pl.Series, top: pl.DataFrame, workload: pl.DataFrame) -> pl.DataFrame:
    """url, impact for each of ``urls``: the summed frequency of the ``workload`` queries whose top K (``top``:
    query, rank, url) holds it; 0 for the rest."""
    frequency = workload.group_by("query").agg(pl.col("frequency").sum().cast(pl.Float64))
    held = top.join(frequency, on="query").group_by("url").agg(impact=pl.col("frequency").sort().sum())
    return (pl.DataFrame({"url": urls}, schema={"url": pl.String})
            .join(held, on="url", how="left", maintain_order="left").with_columns(pl.col("impact").fill_null(0.0)))
