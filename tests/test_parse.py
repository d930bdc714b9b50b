"""Parse stage on crafted awkward documents and on real pages of the dev-docs snapshot, in real WARC files."""

from __future__ import annotations

import gzip
import io
import json
import random
from collections import Counter
from datetime import date
from hashlib import blake2b
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import canonicalize
from crawlcycle.parse.html_page import REASONS
from crawlcycle.parse.simhash import NearDuplicateIndex, hamming, simhash
from crawlcycle.parse.warc_records import parse_warcs
from crawlcycle.settings.sources import load_settings

UA = "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"


def settings(**overrides):
    return load_settings(overrides={"user_agent": UA, "parse_workers": 1, **overrides}, environ={})


def write_warc(path: Path, records: list[tuple]) -> Path:
    """records: (url, body bytes, {header: value}, status line, {WARC header: value})."""
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, body, headers, status, warc_headers in records:
            head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            payload = head.encode("latin-1") + body
            writer.write_record(writer.create_warc_record(
                url, "response", payload=io.BytesIO(payload), length=len(payload),
                warc_headers_dict=warc_headers))
    return path


def html(body: str, head: str = "", lang: str = "en") -> str:
    return f"<!DOCTYPE html><html lang='{lang}'><head>{head}</head><body>{body}</body></html>"


def resp(url, body, ctype="text/html; charset=utf-8", status="200 OK", warc_headers=None, **headers):
    if isinstance(body, str):
        body = body.encode("utf-8")
    hdrs = {"Content-Type": ctype} if ctype else {}
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    # A fixed date: the writer's default is the clock, so two writes a second apart would differ in fetched_at.
    return (url, body, hdrs, status, {"WARC-Date": "2026-01-01T00:00:00Z", **(warc_headers or {})})


ARTICLE = " ".join(f"Sentence {i} explains how the crawler orders its frontier by the impact on search results "
                   f"and why needy query {i % 7} matters." for i in range(60))
OTHER = " ".join(f"Paragraph {i}: the recipe needs {i} grams of flour, butter, and a slow oven at home."
                 for i in range(60))
VOCABULARY = (ARTICLE + " " + OTHER).split()


def filler(key: str) -> str:
    """Text of its own per document, so that only the intended pages are near-duplicates."""
    rng = random.Random(key)
    return " ".join(rng.choice(VOCABULARY) for _ in range(300))


def article(text: str = ARTICLE, links: str = "") -> str:
    return html(f"<article><h1>Impact</h1><p>{text}</p>{links}</article>", "<title>Impact ordering</title>")


def read(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / f"{name}.parquet").to_pylist()


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("awkward")
    many = "".join(f"<a href='/p{i}'>page {i}</a> " for i in range(50))
    records = [
        resp("http://a.test/main", html(
            "<nav><a href='/'>Home</a></nav><main><h1>Guide</h1><p>Read the <a href='intro.html#top'>intro"
            "</a> before you start, then the <a href=\"intro.html\">Intro</a> and the <a href='intro.html'>"
            "intro</a> again.</p><p>" + ARTICLE + "</p><ul><li><a href='mailto:x@a.test'>mail</a></li>"
            "<li><a href='javascript:void(0)'>js</a></li><li><a href='#section'>self</a></li>"
            "<li><a href='/img/logo.png'>logo</a></li><li><a href='http://B.test:80/x/../y?b=2&a=1&utm_source=z'>"
            "<img src='i.gif' alt='Partner   site'></a></li><li><a rel='nofollow ugc' href='/ads'>ad</a></li>"
            "</ul><map><area href='/area' alt='Region'></map></main>",
            "<title> Guide \n page </title><meta name='description' content='All about guides'>"
            "<link rel='canonical' href='/main?utm_source=feed'>", lang="de-AT")),
        resp("http://a.test/latin1", article("Un café très crème " + filler("1")).encode("cp1252")),
        resp("http://a.test/bom", b"\xef\xbb\xbf" + article("Naïve résumé " + filler("2")).encode("utf-8"),
             ctype="text/html"),
        resp("http://a.test/utf16", b"\xff\xfe" + article("Grüße aus Köln " + filler("3")).encode("utf-16-le"),
             ctype="text/html"),
        resp("http://a.test/meta-charset", html(
            "<p>Привет, мир. " + filler("4") + "</p>", "<meta charset='windows-1251'>").encode("cp1251"),
             ctype="text/html"),
        resp("http://a.test/unknown-charset", article(filler("5") + " plain"), ctype="text/html; charset=x-no-such"),
        resp("http://a.test/broken", "<html><body><div><p>Unclosed <b>bold <a href='/ok'>ok link</a> "
             "<table><tr><td>cell</div></span></p><p>" + filler("6") + " <a href=/noquote>nq</a><li>"
             "<a href='/after' class='x>after</a>"),
        resp("http://a.test/garbage", b"\x00\x01\x02<html>\x00\xff\xfe\x00 binary \x00"),
        resp("http://a.test/empty", b""),
        resp("http://a.test/blank", b"   \r\n\t "),
        resp("http://a.test/doc.txt", b"plain text, not a page", ctype="text/plain"),
        resp("http://a.test/untyped", html("<p>" + filler("7") + " sniffed</p>"), ctype=""),
        resp("http://a.test/huge", html("<p>" + "big words here " * 30_000 + "</p>")),
        resp("http://a.test/cut", article(filler("8") + " cut"), warc_headers={"WARC-Truncated": "length"}),
        resp("http://a.test/based/page", html("<a href='child.html'>child</a><p>" + filler("9") + " based</p>",
                                              "<base href='http://cdn.test/docs/'>")),
        resp("http://a.test/nofollow", html("<a href='/x'>x</a><p>" + filler("10") + " nf</p>",
                                            "<meta name='robots' content='NOFOLLOW'>")),
        resp("http://a.test/noindex", html("<a href='/y'>y</a><p>" + filler("11") + " ni</p>",
                                           "<meta name='crawlcycle' content='noindex'>")),
        resp("http://a.test/header-noindex", article(filler("12") + " hn"), X_Robots_Tag="noindex, nofollow"),
        resp("http://a.test/copy", html(
            "<nav><a href='/'>Home</a></nav><main><h1>Guide</h1><p>Read the <a href='intro.html#top'>intro"
            "</a> before you start, then the <a href=\"intro.html\">Intro</a> and the <a href='intro.html'>"
            "intro</a> again.</p><p>" + ARTICLE + "</p></main>", "<title>Copy</title>")),
        resp("http://a.test/near", article(ARTICLE.replace("Sentence 31", "Line 31"))),
        resp("http://a.test/unrelated", article(filler("13"))),
        resp("http://a.test/many", html(many + "<p>" + filler("14") + " many</p>")),
        resp("http://a.test/missing", html("<p>gone</p>"), status="404 Not Found"),
        resp("http://a.test/robots.txt", b"User-agent: *\nDisallow:\n", ctype="text/plain"),
        resp("http://a.test/main", html("<p>second copy of a URL</p>")),
        resp("ftp://a.test/file", html("<p>not an HTTP record</p>")),
        resp("http://a.test/logo.png", html("<p>an admitted URL no more</p>")),
    ]
    warc = write_warc(tmp / "awkward.warc.gz", records)
    out = tmp / "out"
    result = parse_warcs([warc], out, settings(max_body_bytes=200_000, max_outlinks_per_page=10))
    pages = {p["url"]: p for p in read(out, "pages")}
    return result, out, pages, read(out, "links"), read(out, "rejects")


def test_files_and_counts(awkward):
    result, out, pages, links, rejects = awkward
    for name in ("pages.parquet", "links.parquet", "rejects.parquet"):
        assert pq.read_schema(out / name).equals(shard_files.PARSE_OUTPUTS[name])
    assert not list(out.glob(".*tmp"))
    assert result.pages == len(pages) == 23  # 404, robots.txt, ftp and the repeated URL are not pages
    assert result.skipped == 4
    assert (result.links, result.rejects) == (len(links), len(rejects))
    assert all(p["reason"] in (None, *REASONS) for p in pages.values())
    assert sum(result.reasons.values()) == sum(p["reason"] is not None for p in pages.values())


def test_links_anchors_and_rejects(awkward):
    _, _, pages, links, rejects = awkward
    main = pages["http://a.test/main"]
    assert (main["title"], main["description"], main["lang"]) == ("Guide", "All about guides", "de")
    assert main["canonical_link"] == "http://a.test/main"
    out = [(lk["dst"], lk["anchor"], lk["nofollow"]) for lk in links if lk["src"] == "http://a.test/main"]
    assert out == [
        ("http://a.test/", "Home", False),
        ("http://a.test/intro.html", "intro", False),
        ("http://a.test/intro.html", "Intro", False),
        ("http://b.test/y?a=1&b=2", "Partner site", False),
        ("http://a.test/ads", "ad", True),
        ("http://a.test/area", "Region", False),
    ]
    assert main["n_links"] == 6
    intro = next(lk for lk in links if lk["anchor"] == "intro")
    assert intro["context"] == "Read the intro before you start, then the"
    assert sorted((r["raw"], r["reason"]) for r in rejects if r["src"] == "http://a.test/main") == [
        ("/img/logo.png", "binary_extension"), ("javascript:void(0)", "bad_scheme"),
        ("mailto:x@a.test", "bad_scheme")]
    for lk in links:
        assert canonicalize(lk["dst"]) == lk["dst"]
    assert [lk["dst"] for lk in links if lk["src"] == "http://a.test/based/page"] == ["http://cdn.test/docs/child.html"]
    assert len([lk for lk in links if lk["src"] == "http://a.test/many"]) == 10
    assert pages["http://a.test/many"]["n_links"] == 10
    # Links past the cap are refused with a reason (as many as the cap itself, bounding a trap page).
    refused = [r["raw"] for r in rejects if r["src"] == "http://a.test/many" and r["reason"] == "too_many_links"]
    assert refused == [f"/p{i}" for i in range(10, 20)]


def test_charsets(awkward):
    _, _, pages, _, _ = awkward
    assert "Un café très crème" in pages["http://a.test/latin1"]["text"]
    assert pages["http://a.test/latin1"]["reason"] == "decode_error"  # header said utf-8
    assert "Naïve résumé" in pages["http://a.test/bom"]["text"]
    assert "Grüße aus Köln" in pages["http://a.test/utf16"]["text"]
    assert "Привет, мир." in pages["http://a.test/meta-charset"]["text"]
    for url in ("bom", "utf16", "meta-charset"):
        assert pages[f"http://a.test/{url}"]["reason"] is None, url
    assert pages["http://a.test/unknown-charset"]["reason"] == "decode_error"
    assert pages["http://a.test/unknown-charset"]["text"]


def test_broken_empty_and_non_html(awkward):
    _, _, pages, links, _ = awkward
    broken = pages["http://a.test/broken"]
    assert {lk["dst"] for lk in links if lk["src"] == broken["url"]} == {"http://a.test/ok", "http://a.test/noquote"}
    assert broken["text"] and broken["reason"] is None
    assert pages["http://a.test/garbage"]["reason"] == "decode_error"  # header said utf-8
    for url, why in [("empty", "empty_body"), ("blank", "empty_body"), ("doc.txt", "not_html")]:
        page = pages[f"http://a.test/{url}"]
        assert (page["reason"], page["text"], page["n_links"]) == (why, None, 0), url
    assert pages["http://a.test/empty"]["content_hash"] is None
    assert pages["http://a.test/doc.txt"]["content_hash"]
    assert pages["http://a.test/doc.txt"]["content_type"] == "text/plain"
    assert pages["http://a.test/untyped"]["text"] and pages["http://a.test/untyped"]["content_type"] is None
    assert pages["http://a.test/logo.png"]["reason"] == "bad_url"


def test_truncation(awkward):
    _, _, pages, _, _ = awkward
    huge = pages["http://a.test/huge"]
    assert huge["reason"] == "truncated" and huge["bytes"] == 200_000 and "big words here" in huge["text"]
    assert pages["http://a.test/cut"]["reason"] == "truncated"


def test_robots_directives(awkward):
    _, _, pages, links, _ = awkward
    srcs = {lk["src"] for lk in links}
    nf = pages["http://a.test/nofollow"]
    assert (nf["nofollow"], nf["noindex"], nf["n_links"], nf["reason"]) == (True, False, 1, None)
    assert nf["url"] not in srcs
    ni = pages["http://a.test/noindex"]
    assert (ni["noindex"], ni["text"], ni["reason"]) == (True, None, "noindex")
    assert ni["url"] in srcs and ni["simhash"] is not None
    hn = pages["http://a.test/header-noindex"]
    assert (hn["noindex"], hn["nofollow"], hn["reason"]) == (True, True, "noindex")


def test_duplicates(awkward):
    _, _, pages, links, _ = awkward
    main, copy, near = pages["http://a.test/main"], pages["http://a.test/copy"], pages["http://a.test/near"]
    assert copy["content_hash"] == main["content_hash"] and copy["duplicate_of"] == main["url"]
    assert copy["url"] not in {lk["src"] for lk in links}  # an exact copy's links are not emitted again
    assert near["content_hash"] != main["content_hash"]
    assert hamming(near["simhash"], main["simhash"]) <= 3 and near["duplicate_of"] == main["url"]
    assert pages["http://a.test/unrelated"]["duplicate_of"] is None
    assert main["duplicate_of"] is None


def test_output_follows_the_fetch_log_not_the_warc(tmp_path):
    """Hosts are fetched side by side, so the WARC's record order is the hosts' timing: the parse output, which copy
    of a page is the original and the links' order with it, follows the fetch log (the batch's order) instead."""
    import pyarrow as pa

    records = [resp(f"http://{h}.test/{n}", article(filler("same") if n == "copy" else filler(h + n),
                                                   links=f'<a href="/{h}-{n}-next">next</a>'))
               for h in ("x", "y") for n in ("copy", "page")]
    urls = [r[0] for r in records]
    log = pa.Table.from_pylist([{"url": u, "final_url": u, "status": 200, "truncated": False} for u in urls])
    outputs = []
    for name, order in (("fetched", records), ("reversed", records[::-1])):
        out = tmp_path / name
        out.mkdir()
        pq.write_table(log, out / shard_files.FETCH_LOG)
        parse_warcs([write_warc(out / "r.warc.gz", order)], out, settings(), fetch_log=out / shard_files.FETCH_LOG)
        outputs.append((read(out, "pages"), read(out, "links")))
    assert outputs[0] == outputs[1]
    pages = outputs[0][0]
    assert [p["url"] for p in pages] == urls
    assert pages[2]["duplicate_of"] == urls[0]  # y's copy repeats x's, first in the batch


def test_canonical_declarations(tmp_path):
    """The one URL a response names as its canonical, from the Link header (any content type) and the head's
    <link rel=canonical>, resolved and canonicalized; declarations that disagree, or only in the body, name none."""
    def page(canonical: str = "", head: str = "", body: str = "") -> str:
        link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
        return html(f"{body}<p>{filler(canonical + head + body)}</p>", f"<title>t</title>{link}{head}")

    records = [
        resp("http://a.test/pdf", b"%PDF-1.4 body", ctype="application/pdf",
             Link='<http://cdn.test/f.woff2>; rel=preload; as="font"; title="a, <b>", </pdf.html>; rel="canonical"'),
        resp("http://a.test/agree", page("/agree?utm_source=feed"), Link='<http://a.test/agree>; rel=canonical'),
        resp("http://a.test/disagree", page("/one"), Link='</two>; rel="canonical"'),
        resp("http://a.test/two-tags", page("/one", head='<link rel="canonical" href="/two">')),
        resp("http://a.test/in-body", page(body='<link rel="canonical" href="/spam">')),
        resp("http://a.test/dir/based", page("page", head='<base href="http://a.test/other/">')),
        resp("http://a.test/binary", page("/file.pdf")),
        resp("http://a.test/index.html", page("./")),
        resp("http://a.test/alt", page(head='<link rel="alternate canonical" href="HTTP://A.TEST:80/alt">')),
    ]
    parse_warcs([write_warc(tmp_path / "c.warc.gz", records)], tmp_path, settings())
    canonical = {p["url"].removeprefix("http://a.test"): p["canonical_link"] for p in read(tmp_path, "pages")}
    assert canonical == {
        "/pdf": "http://a.test/pdf.html", "/agree": "http://a.test/agree", "/disagree": None, "/two-tags": None,
        "/in-body": None, "/dir/based": "http://a.test/other/page", "/binary": None,
        "/index.html": "http://a.test/", "/alt": "http://a.test/alt"}


def test_a_page_naming_another_as_canonical_is_not_the_original(tmp_path):
    """/index.html names / and holds the same text: / is the original though index.html came first in the batch."""
    body = article(filler("home"), links='<a href="/next">next</a>')
    records = [resp("http://a.test/index.html", body.replace("<head>", '<head><link rel="canonical" href="/">')),
               resp("http://a.test/", body)]
    parse_warcs([write_warc(tmp_path / "i.warc.gz", records)], tmp_path, settings())
    pages = read(tmp_path, "pages")
    assert [(p["url"], p["duplicate_of"]) for p in pages] == [
        ("http://a.test/index.html", "http://a.test/"), ("http://a.test/", None)]
    assert [lk["src"] for lk in read(tmp_path, "links")] == ["http://a.test/"]


def test_dates_a_page_declares(tmp_path):
    """Without trafilatura's whole date search a page's date is what it declares for machines: <meta> date tags and
    JSON-LD, not a <time> element."""
    records = [
        resp("http://a.test/meta", article().replace(
            "<head>", '<head><meta property="article:published_time" content="2021-03-04T05:06:07Z">'
                      '<meta property="article:modified_time" content="2022-01-01T00:00:00Z">')),
        resp("http://a.test/modified", article().replace(
            "<head>", '<head><meta property="article:modified_time" content="2022-01-02T00:00:00Z">')),
        resp("http://a.test/json-ld", article().replace(
            "<head>", '<head><script type="application/ld+json">{"@type": "Article", '
                      '"datePublished": "2020-07-08T09:00:00Z"}</script>')),
        resp("http://a.test/time", article(links='<time datetime="2019-05-06">6 May</time>')),
    ]
    warc = write_warc(tmp_path / "d.warc.gz", records)
    for extractor in ("trafilatura_text", "resiliparse"):
        parse_warcs([warc], tmp_path / extractor, settings(extractor=extractor))
        assert {p["url"]: p["date"] for p in read(tmp_path / extractor, "pages")} == {
            "http://a.test/meta": "2021-03-04", "http://a.test/modified": "2022-01-02",
            "http://a.test/json-ld": "2020-07-08", "http://a.test/time": None}, extractor


def test_declared_dates_of_real_news_pages_match_trafilaturas(shared, tmp_path):
    """On the extraction benchmark's 181 real news and blog pages the dates declared in meta tags and JSON-LD are the
    dates trafilatura's whole search finds, or (a UTC time in the meta tag, the local date in the URL) a day later."""
    bench = shared / "extraction-benchmark"
    truth = json.loads((bench / "ground-truth.json").read_text())
    records = [resp(item["url"], gzip.decompress((bench / "html" / f"{key}.html.gz").read_bytes()))
               for key, item in sorted(truth.items())]
    warc = write_warc(tmp_path / "news.warc.gz", records)
    dates = {}
    for extractor in ("trafilatura", "trafilatura_text"):
        parse_warcs([warc], tmp_path / extractor, settings(extractor=extractor, parse_workers=2))
        dates[extractor] = {p["url"]: p["date"] for p in read(tmp_path / extractor, "pages")}
    full, declared = dates["trafilatura"], dates["trafilatura_text"]
    dated = [url for url, day in declared.items() if day]
    assert len(dated) > 0.75 * len(declared)
    gaps = Counter((date.fromisoformat(declared[u]) - date.fromisoformat(full[u])).days for u in dated)
    assert set(gaps) <= {0, 1} and gaps[0] > 0.9 * len(dated)


def test_simhash_is_stable_and_separates_texts():
    assert simhash("") is None
    assert simhash("The quick brown fox jumps over the lazy dog") == 0x77B12FE87CF06675
    # a text shorter than a shingle is one shingle: the fingerprint is that shingle's hash
    assert simhash("Two Words") == int.from_bytes(blake2b(b"two words", digest_size=8).digest(), "big")
    a = simhash(ARTICLE)
    assert hamming(a, simhash(ARTICLE.replace("Sentence 5 ", "Line 5 "))) <= 3
    assert hamming(a, simhash(OTHER)) > 12
    assert hamming(simhash(filler("a")), simhash(filler("b"))) > 12
    index = NearDuplicateIndex()
    index.add(a, "first")
    index.add(a ^ 0b1, "second")
    assert index.find(a ^ 0b111) == "first"      # 3 bits from the first
    assert index.find(a ^ 0b1111) == "second"    # 4 bits from the first, 3 from the second
    assert index.find(a ^ 0xF0F0) is None


@pytest.fixture(scope="module")
def real_warc(tmp_path_factory, dev_docs):
    """The first small HTML pages of each host of the real dev-docs snapshot, rewritten to a WARC."""
    per_host: dict[str, int] = {}
    records = []
    with open(dev_docs, "rb") as f:
        for rec in ArchiveIterator(f):
            url = rec.rec_headers.get_header("WARC-Target-URI")
            host = url.split("/")[2]
            ctype = rec.http_headers.get_header("Content-Type") or ""
            if ctype.startswith("text/html") and int(rec.rec_headers.get_header("Content-Length")) < 30_000 \
                    and per_host.get(host, 0) < 10:
                per_host[host] = per_host.get(host, 0) + 1
                records.append(resp(url, rec.content_stream().read(), ctype=ctype))
    assert len(per_host) == 8
    return write_warc(tmp_path_factory.mktemp("real") / "real.warc.gz", records), len(records)


def test_real_canonicals_are_self_canonical(real_warc, tmp_path):
    """The Python and Sphinx documentation pages name themselves as their canonical, as every page of dev-docs
    carrying one does: nothing to fold."""
    parse_warcs([real_warc[0]], tmp_path, settings())
    declaring = [p for p in read(tmp_path, "pages") if p["canonical_link"]]
    assert {p["url"].split("/")[2] for p in declaring} == {"python.docs.test", "sphinx.docs.test"}
    assert all(p["canonical_link"] == p["url"] for p in declaring)


def test_real_pages_in_pool_and_in_process(real_warc, tmp_path):
    warc, n = real_warc
    pooled = parse_warcs([warc], tmp_path / "pool", settings(parse_workers=2))
    single = parse_warcs([warc], tmp_path / "one", settings(parse_workers=1))
    assert pooled.pages == single.pages == n
    for name in ("pages", "links", "rejects"):
        assert read(tmp_path / "pool", name) == read(tmp_path / "one", name), name
    pages = read(tmp_path / "one", "pages")
    html_pages = [p for p in pages if p["duplicate_of"] is None]
    assert len(html_pages) >= n - 3
    for p in html_pages:
        assert p["title"] and p["text"] and p["n_links"] > 0 and p["simhash"] is not None, p["url"]
    assert sum(p["lang"] == "en" for p in pages) >= n // 2
    links = read(tmp_path / "one", "links")
    assert {"src": "http://python.docs.test/about.html", "dst": "http://python.docs.test/bugs.html"}.items() <= \
        next(lk for lk in links if lk["src"].endswith("/about.html") and lk["dst"].endswith("/bugs.html")).items()
    assert len({lk["src"].split("/")[2] for lk in links}) == 8
    assert all(canonicalize(lk["dst"]) == lk["dst"] for lk in links)


def test_extractors_on_real_pages(real_warc, tmp_path):
    """trafilatura_text keeps trafilatura's title, description and main text of real documentation pages,
    without its date; resiliparse keeps the same title and finds the same main content, not the navigation; visible
    keeps the navigation too, and every word of the main content."""
    warc, _ = real_warc
    pages = {name: {p["url"]: p for p in (parse_warcs([warc], tmp_path / name, settings(extractor=name)) and
                                          read(tmp_path / name, "pages"))}
             for name in ("trafilatura", "trafilatura_text", "resiliparse", "visible")}
    full, text_only, resili = pages["trafilatura"], pages["trafilatura_text"], pages["resiliparse"]
    visible = pages["visible"]
    assert full.keys() == text_only.keys() == resili.keys() == visible.keys()
    for url, page in full.items():
        assert {k: v for k, v in text_only[url].items() if k != "date"} == {k: v for k, v in page.items()
                                                                         if k != "date"}, url
        assert text_only[url]["date"] is None
        assert resili[url]["title"] == page["title"], url
    dated = [p for p in full.values() if p["date"]]
    assert dated, "trafilatura finds some pages' dates"
    # Sphinx's navigation bar ("previous" / "next" / "index" links) is boilerplate for both extractors
    about = "http://python.docs.test/about.html"
    for extracted in (full[about], resili[about]):
        assert "Sphinx" in extracted["text"] and "modules |" not in extracted["text"]
    assert "modules |" in visible[about]["text"] and visible[about]["title"] == resili[about]["title"]
    kept = [len(set(resili[u]["text"].split()) & set(visible[u]["text"].split())) / len(set(resili[u]["text"].split()))
            for u in resili if resili[u]["text"]]
    assert min(kept) > 0.9 and sorted(kept)[len(kept) // 2] == 1.0, "the visible text holds the main content's words"
    shared = [url for url in full if full[url]["text"] and resili[url]["text"]]
    assert len(shared) >= len(full) - 3
    overlap = [len(set(full[u]["text"].split()) & set(resili[u]["text"].split())) / len(set(full[u]["text"].split()))
               for u in shared]
    assert sorted(overlap)[len(overlap) // 2] > 0.8, "resiliparse keeps most of trafilatura's words on most pages"


def test_unknown_extractor_is_a_one_line_error():
    with pytest.raises(ValueError, match="extractor: choose one of trafilatura_text, trafilatura, resiliparse"):
        settings(extractor="readability")
