"""Judges of page impact that the product did not write: a panel of real search libraries and text views.

The simulator's reference ground truth reads pages with our parser and ranks them with our BM25F ranker, so a
policy tuned to those could look better than it is, and a user's engine is not that ranker either: it indexes
what its own pipeline extracts, with its own analyzer, field boosts and length caps. Each judge of ``PANEL`` is
one such engine, and ranks the same workload over its own view of every page (:class:`Judge`):

- ``bm25s``: plain BM25 (``bm25s``) over the title and the whole visible ``<body>`` text (lxml), English stop words
  and the Snowball English stemmer;
- ``bm25s_plain``: the same text and engine without stemmer or stop words (an engine indexing words as written);
- ``bm25s_main``: the same analyzer over the title and the main text our parser extracts (trafilatura), as an
  engine that strips boilerplate;
- ``tantivy``: a Lucene-like engine (Rust ``tantivy``, BM25 per field, its ``en_stem`` analyzer) with the title
  as its own field boosted 3 times and the body capped at its first 10,000 words (Lucene's former
  ``maxFieldLength``), as a typical site-search set-up.

A page's impact under a judge is, as in the reference, the summed frequency of the queries whose top K holds it.
Nothing is downloaded: tokenizers, stop words and stemmers ship with the packages.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import Path

import bm25s
import lxml.html
import polars as pl
import Stemmer
import tantivy
from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.contracts.canonical import UrlRejected, canonicalize
from crawlcycle.settings import Settings

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_INVISIBLE = ("script", "style", "noscript", "template")
# Elements that break a line when rendered: their text must not run into their neighbours' ("a</p><p>b").
_BLOCKS = frozenset("""address article aside blockquote br caption dd details div dl dt fieldset figcaption figure
    footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol option p pre section summary table td th tr ul""".split())
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([^\"';\s]+)", re.I)
_PAGES_SCHEMA = {"url": pl.String, "title": pl.String, "text": pl.String}
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Judge:
    """One engine of the panel: the library that ranks, the text it reads (``visible``: title and every visible
    word of the body; ``main``: title and our parser's main text), its analyzer (a Snowball stemmer language or
    none, English stop words or none), the weight of the title against the body and the body words it keeps."""

    name: str
    engine: str  # "bm25s" (title and body as one text) or "tantivy" (title and body as fields)
    text: str  # "visible" or "main"
    stemmer: str | None = "english"
    stopwords: bool = True
    title_boost: float = 1.0  # tantivy only: bm25s reads title and body as one text
    body_words: int | None = None  # the body's first words indexed; None: all


PANEL = (Judge("bm25s", "bm25s", "visible"),
         Judge("bm25s_plain", "bm25s", "visible", stemmer=None, stopwords=False),
         Judge("bm25s_main", "bm25s", "main"),
         Judge("tantivy", "tantivy", "visible", stopwords=False, title_boost=3.0, body_words=10_000))
BY_NAME = {j.name: j for j in PANEL}


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


def judge_top_k(judge: Judge, pages: pl.DataFrame, workload: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """query, rank, url: each ``workload`` query's (query, frequency) top ``top_k`` by ``judge`` over ``pages``
    (url, title, text: the judge's text view), pages that match it only."""
    queries = workload["query"].unique().sort().to_list()
    if pages.is_empty() or not queries or top_k <= 0:
        found: list[tuple[str, int, str]] = []
    elif judge.engine == "tantivy":
        found = _tantivy_top_k(judge, pages, queries, top_k)
    else:
        found = _bm25s_top_k(judge, pages, queries, top_k)
    return pl.DataFrame(found, schema={"query": pl.String, "rank": pl.Int64, "url": pl.String}, orient="row")


def _body(judge: Judge, text: str | None) -> str:
    """The body text ``judge`` indexes: its first ``body_words`` words."""
    text = text or ""
    return text if judge.body_words is None else " ".join(text.split(maxsplit=judge.body_words)[:judge.body_words])


def _bm25s_top_k(judge: Judge, pages: pl.DataFrame, queries: list[str], top_k: int) -> list[tuple[str, int, str]]:
    urls = pages["url"].to_list()
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en" if judge.stopwords else None,
                                             stemmer=Stemmer.Stemmer(judge.stemmer) if judge.stemmer else None)
    corpus = tokenizer.tokenize([f"{t or ''}\n{_body(judge, x)}" for t, x in zip(pages["title"], pages["text"],
                                                                               strict=True)],
                                update_vocab=True, return_as="ids", show_progress=False, allow_empty=False)
    # query words absent from every page are dropped; a query left without words shows no page
    tokens = tokenizer.tokenize(queries, update_vocab=False, return_as="ids", show_progress=False, allow_empty=False)
    asked = [i for i, q in enumerate(tokens) if q]
    if not asked:
        return []
    index = bm25s.BM25()
    index.index(tokenizer.to_tokenized_tuple(corpus), show_progress=False)
    docs, scores = index.retrieve([tokens[i] for i in asked], k=min(top_k, len(urls)), show_progress=False)
    found = []
    for row, i in enumerate(asked):
        shown = docs[row][scores[row] > 0]  # a top K is padded with non-matching pages when fewer than K match
        found += [(queries[i], rank, urls[doc]) for rank, doc in enumerate(shown.tolist(), 1)]
    return found


def _tantivy_top_k(judge: Judge, pages: pl.DataFrame, queries: list[str], top_k: int) -> list[tuple[str, int, str]]:
    if judge.stemmer not in (None, "english") or judge.stopwords:
        raise ValueError(f"judge {judge.name}: tantivy's analyzers here are en_stem and default, without stop words")
    analyzer = "en_stem" if judge.stemmer else "default"
    builder = tantivy.SchemaBuilder()
    for name in ("title", "body"):
        builder.add_text_field(name, stored=False, tokenizer_name=analyzer)
    builder.add_integer_field("doc", stored=True, indexed=False)
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=128_000_000, num_threads=1)  # one segment, in document order: ties stay put
    for doc, (title, text) in enumerate(zip(pages["title"], pages["text"], strict=True)):
        writer.add_document(tantivy.Document(doc=doc, title=title or "", body=_body(judge, text)))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher, urls = index.searcher(), pages["url"].to_list()
    found = []
    for text in queries:
        words = " ".join(_WORD.findall(text.lower()))  # plain words: no query syntax, no AND/OR operator
        if not words:
            continue
        hits = searcher.search(index.parse_query(words, ["title", "body"], field_boosts={"title": judge.title_boost}),
                               top_k).hits
        found += [(text, rank, urls[searcher.doc(address)["doc"][0]])
                  for rank, (score, address) in enumerate(hits, 1) if score > 0]
    return found


def judge_impact(judge: Judge, pages: pl.DataFrame, workload: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """url, impact for every page of ``pages`` (url, title, text): the summed frequency of the ``workload``
    queries (query, frequency) whose top ``top_k`` by ``judge`` holds the page; 0 for the rest."""
    return impact_of(pages["url"], judge_top_k(judge, pages, workload, top_k), workload)


def impact_of(urls: pl.Series, top: pl.DataFrame, workload: pl.DataFrame) -> pl.DataFrame:
    """url, impact for each of ``urls``: the summed frequency of the ``workload`` queries whose top K (``top``:
    query, rank, url) holds it; 0 for the rest."""
    frequency = workload.group_by("query").agg(pl.col("frequency").sum().cast(pl.Float64))
    held = top.join(frequency, on="query").group_by("url").agg(impact=pl.col("frequency").sort().sum())
    return (pl.DataFrame({"url": urls}, schema={"url": pl.String})
            .join(held, on="url", how="left", maintain_order="left").with_columns(pl.col("impact").fill_null(0.0)))
