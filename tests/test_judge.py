"""The panel of judges: its own visible-text extraction from WARC records, and each engine's top-K impact."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest
from warcio.warcwriter import WARCWriter

from crawlcycle.evaluation.judge import BY_NAME, PANEL, Judge, judge_impact, judge_top_k, visible_pages
from crawlcycle.settings.sources import load_settings

SETTINGS = load_settings(overrides={"user_agent": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"}, environ={})

WINDOW = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>PostgreSQL: 3.5. Window Functions</title>
<style>.navheader { colour: stylesheettoken }</style>
<script>var analytics = "trackingscripttoken"; document.title = "x";</script></head>
<body><div class="navheader"><a href="index.html">Home</a></div>
<h2>3.5. Window Functions</h2><p>A <em>window function</em> performs a calculation across a set of table rows that
are somehow related to the current row. Window functions use an OVER clause with PARTITION BY.</p>
<noscript>Enable noscripttoken</noscript><template><p>templatetoken</p></template>
<pre>SELECT depname, avg(salary) OVER (PARTITION BY depname) FROM empsalary;</pre>
<!-- commenttoken --><p>Next</p></body></html>"""

SIGNALS = """<html><head><title>Signals</title></head><body><h1>signal — asynchronous events</h1>
<p>The handler runs in the main thread whenever the interpreter receives a signal.</p></body></html>"""

INSTALL = """<html><head><title>Installation guide</title></head><body><ul><li>Download the tarball</li>
<li>Configure</li></ul><table><tr><td>make</td><td>install</td></tr></table></body></html>"""

LATIN = "<html><head><title>Caf\xe9 cr\xe8me</title></head><body><p>Na\xefve r\xe9sum\xe9</p></body></html>"


def _warc(path: Path, records: list[tuple[str, str, str, bytes]]) -> Path:
    """records: (url, HTTP status line, Content-Type, body)."""
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, status, ctype, body in records:
            payload = f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n\r\n".encode("latin-1") + body
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(payload),
                                                          length=len(payload)))
    return path


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    html = "text/html; charset=utf-8"
    warc = _warc(tmp_path_factory.mktemp("judge") / "site.warc.gz", [
        ("http://docs.test/tutorial/window.html", "200 OK", html, WINDOW.encode()),
        ("http://docs.test/library/signal.html", "200 OK", "application/xhtml+xml", SIGNALS.encode()),
        ("http://docs.test/install.html?utm_source=feed", "200 OK", html, INSTALL.encode()),
        # a later record of the same URL loses to the first
        ("http://docs.test/tutorial/window.html", "200 OK", html, b"<html><title>Later copy</title></html>"),
        ("http://docs.test/latin.html", "200 OK", "text/html; charset=ISO-8859-1", LATIN.encode("latin-1")),
        ("http://docs.test/broken.html", "200 OK", html, b"<html><body><p>caf\xe9 \xff\xfe ok</p></body></html>"),
        ("http://docs.test/empty.html", "200 OK", html, b""),
        ("http://docs.test/missing.html", "404 Not Found", html, b"<html><title>Gone</title></html>"),
        ("http://docs.test/notes.txt", "200 OK", "text/plain", b"plain text notes about window functions"),
        ("http://docs.test/logo.png", "200 OK", "text/html", b"<html><title>png</title></html>"),
    ])
    return visible_pages([warc], SETTINGS)


def _page(pages: pl.DataFrame, url: str) -> dict:
    return pages.filter(pl.col("url") == url).row(0, named=True)


def test_only_2xx_html_records_with_accepted_urls_are_pages_and_the_first_record_wins(pages: pl.DataFrame) -> None:
    assert pages.columns == ["url", "title", "text"]
    assert sorted(pages["url"]) == ["http://docs.test/broken.html", "http://docs.test/empty.html",
                                    "http://docs.test/install.html", "http://docs.test/latin.html",
                                    "http://docs.test/library/signal.html", "http://docs.test/tutorial/window.html"]
    assert _page(pages, "http://docs.test/tutorial/window.html")["title"] == "PostgreSQL: 3.5. Window Functions"


def test_visible_text_leaves_out_scripts_styles_and_comments_and_keeps_blocks_apart(pages: pl.DataFrame) -> None:
    window = _page(pages, "http://docs.test/tutorial/window.html")
    assert window["text"].startswith("Home 3.5. Window Functions A window function performs a calculation")
    assert "OVER (PARTITION BY depname) FROM empsalary; Next" in window["text"]
    for hidden in ("stylesheettoken", "trackingscripttoken", "noscripttoken", "templatetoken", "commenttoken"):
        assert hidden not in window["text"]
    assert "PostgreSQL" not in window["text"]  # the title is not body text
    assert _page(pages, "http://docs.test/install.html")["text"] == "Download the tarball Configure make install"


def test_bodies_are_decoded_by_their_header_charset_and_bad_bytes_are_replaced(pages: pl.DataFrame) -> None:
    latin = _page(pages, "http://docs.test/latin.html")
    assert (latin["title"], latin["text"]) == ("Café crème", "Naïve résumé")
    assert _page(pages, "http://docs.test/broken.html")["text"] == "caf\ufffd \ufffd\ufffd ok"
    assert _page(pages, "http://docs.test/empty.html") == {"url": "http://docs.test/empty.html", "title": "",
                                                           "text": ""}


BM25S = BY_NAME["bm25s"]


def _impact(pages: pl.DataFrame, queries: dict[str, int], top_k: int, judge: Judge = BM25S) -> dict[str, float]:
    workload = pl.DataFrame({"query": list(queries), "frequency": list(queries.values())})
    out = judge_impact(judge, pages, workload, top_k)
    assert out.columns == ["url", "impact"] and sorted(out["url"]) == sorted(pages["url"])  # every page, once
    return dict(out.iter_rows())


def test_a_query_about_a_page_s_words_puts_that_page_first(pages: pl.DataFrame) -> None:
    impact = _impact(pages, {"window function partition": 40}, top_k=1)
    assert impact == {url: 40.0 if url.endswith("window.html") else 0.0 for url in pages["url"]}


def test_stemming_matches_word_forms(pages: pl.DataFrame) -> None:
    signals = _page(pages, "http://docs.test/library/signal.html")
    assert "running" not in signals["text"] and "runs" in signals["text"]
    assert _impact(pages, {"running handlers": 7}, top_k=1)["http://docs.test/library/signal.html"] == 7.0


def test_impact_sums_the_frequencies_of_the_queries_that_show_a_page(pages: pl.DataFrame) -> None:
    impact = _impact(pages, {"window functions": 5, "signal handler": 3, "installation tarball": 2,
                             "the of and": 100, "zyzzyva": 50}, top_k=2)
    # stop words only, or words on no page: no page is shown; pages matching no query term are not padded in
    assert impact["http://docs.test/tutorial/window.html"] == 5.0
    assert impact["http://docs.test/library/signal.html"] == 3.0
    assert impact["http://docs.test/install.html"] == 2.0
    assert sum(impact.values()) == 10.0
    assert impact["http://docs.test/empty.html"] == 0.0


def test_repeated_queries_add_up_and_no_query_means_no_impact(pages: pl.DataFrame) -> None:
    workload = pl.DataFrame({"query": ["signal handler", "signal handler"], "frequency": [3, 4]})
    assert dict(judge_impact(BM25S, pages, workload, 1).iter_rows())["http://docs.test/library/signal.html"] == 7.0
    none = judge_impact(BM25S, pages, workload.clear(), 10)
    assert none.height == pages.height and none["impact"].sum() == 0.0


def test_every_judge_of_the_panel_ranks_the_page_about_the_query_first(pages: pl.DataFrame) -> None:
    assert [j.name for j in PANEL][0] == "bm25s" and len({j.name for j in PANEL}) == len(PANEL)
    for judge in PANEL:
        impact = _impact(pages, {"window function partition": 40, "zyzzyva": 9}, top_k=1, judge=judge)
        assert impact == {url: 40.0 if url.endswith("window.html") else 0.0 for url in pages["url"]}, judge.name


def test_a_judge_without_stemmer_misses_other_word_forms_and_keeps_stop_words(pages: pl.DataFrame) -> None:
    plain = BY_NAME["bm25s_plain"]
    assert plain.stemmer is None and not plain.stopwords
    assert _impact(pages, {"running": 7}, top_k=1, judge=plain)["http://docs.test/library/signal.html"] == 0.0
    assert _impact(pages, {"running": 7}, top_k=1)["http://docs.test/library/signal.html"] == 7.0
    # "the" is on every page with text: a stop word to bm25s, a word like any other without the stop list
    assert sum(_impact(pages, {"the": 1}, top_k=10).values()) == 0.0
    assert sum(_impact(pages, {"the": 1}, top_k=10, judge=plain).values()) > 0.0


def _two_pages(title_a: str, text_a: str, title_b: str, text_b: str) -> pl.DataFrame:
    return pl.DataFrame({"url": ["http://a.test/", "http://b.test/"], "title": [title_a, title_b],
                         "text": [text_a, text_b]})


def test_tantivy_weighs_the_title_and_stems_and_caps_the_body() -> None:
    tantivy = BY_NAME["tantivy"]
    filler = " ".join(f"word{i}" for i in range(60))
    # the query word once in a title against twice in a body of the same length: the boost decides
    pages = _two_pages("Sockets", f"networking {filler}", "Networking", f"sockets sockets {filler}")
    workload = pl.DataFrame({"query": ["socket"], "frequency": [1]})
    unboosted = Judge("tantivy_flat", "tantivy", "visible", stopwords=False)
    assert judge_top_k(tantivy, pages, workload, 1)["url"].to_list() == ["http://a.test/"]
    assert judge_top_k(unboosted, pages, workload, 1)["url"].to_list() == ["http://b.test/"]
    # a word past the body's cap is not indexed
    capped = Judge("tantivy_capped", "tantivy", "visible", stopwords=False, body_words=60)
    pages = _two_pages("One", f"{filler} zyzzyva", "Two", "other words")
    workload = pl.DataFrame({"query": ["zyzzyva"], "frequency": [1]})
    assert judge_top_k(unboosted, pages, workload, 2)["url"].to_list() == ["http://a.test/"]
    assert judge_top_k(capped, pages, workload, 2).is_empty()


def test_query_syntax_is_read_as_plain_words() -> None:
    pages = _two_pages("Window functions", "partition by and order by", "Signals", "handlers")
    workload = pl.DataFrame({"query": ['title:"window" AND (partition OR -signals)', ":::"], "frequency": [1, 1]})
    top = judge_top_k(BY_NAME["tantivy"], pages, workload, 2)
    assert top.rows() == [('title:"window" AND (partition OR -signals)', 1, "http://a.test/"),
                          ('title:"window" AND (partition OR -signals)', 2, "http://b.test/")]
