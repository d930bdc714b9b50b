"""Sitemaps as a URL source: the reader on real-shaped files, the sitemap reader of one host's run and the fetcher
reading them politely on loopback."""

from __future__ import annotations

import gzip
import time
from datetime import datetime
from pathlib import Path

import pytest

from crawlcycle.contracts import shard_files
from crawlcycle.fetch.sitemaps import read_sitemap
from tests.support.faultserver import FaultServer, page, redirect, respond
from tests.support.fetching import gaps, host_loop, run, settings_for

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str, extra: str = "") -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc><lastmod>2026-11-01</lastmod><changefreq>weekly</changefreq>"
                      f"<priority>0.5</priority>{extra}</url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n{entries}\n</urlset>\n'.encode()


def index(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc><lastmod>2026-11-01T10:00:00+00:00</lastmod></sitemap>"
                      for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>{entries}</sitemapindex>'.encode()


@pytest.mark.parametrize(("body", "kind", "locs", "reason"), [
    (urlset("http://s.test/a", " http://s.test/b?x=1&amp;y=2 "), "urlset", ["http://s.test/a", "http://s.test/b?x=1&y=2"],
     None),
    (index("http://s.test/1.xml", "http://s.test/2.xml.gz"), "sitemapindex",
     ["http://s.test/1.xml", "http://s.test/2.xml.gz"], None),
    (gzip.compress(urlset("http://s.test/z")), "urlset", ["http://s.test/z"], None),
    (b"\xef\xbb\xbfhttp://s.test/t1\r\n\r\n# no\nhttps://s.test/t2\n", "text", ["http://s.test/t1", "https://s.test/t2"],
     None),
    # images and news extensions are other namespaces: only the page's own <loc> counts
    (urlset("http://s.test/i", extra='<image:image xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
                                      "<image:loc>http://s.test/i.png</image:loc></image:image>"),
     "urlset", ["http://s.test/i"], None),
    (urlset("http://s.test/a")[:-30], "urlset", ["http://s.test/a"], "malformed_xml"),
    (b"<html><body>not a sitemap</body></html>", None, [], "not_a_sitemap: root <html>"),
    (b"", None, [], "empty"),
    (b"\x1f\x8b\x08garbage", None, [], "bad_gzip"),
    # an external entity is not read (no file, no network): the <loc> it was meant to fill stays empty
    ('<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
     f"<urlset {NS}><url><loc>&x;</loc></url></urlset>".encode(), "urlset", [], None),
])
def test_reader_on_real_shaped_files(body: bytes, kind: str | None, locs: list[str], reason: str | None) -> None:
    sitemap = read_sitemap(body, 1_000_000)
    assert (sitemap.kind, sitemap.locs) == (kind, locs)
    assert (sitemap.reason or "").startswith(reason or "") and (reason is None) == (sitemap.reason is None)


def test_reader_keeps_each_page_s_lastmod_in_utc_and_counts_values_in_no_w3c_form() -> None:
    dates = {"/date": "2026-11-01", "/month": "2026-11", "/year": "2026", "/utc": "2026-11-01T10:20:30Z",
             "/minutes": "2026-11-01T10:20+02:00", "/fraction": " 2026-11-01T10:20:30.25-05:30 ",
             "/no-zone": "2026-11-01T10:20:30", "/spaced": "2026-11-01 10:20:30+00:00", "/month13": "2026-13-01",
             "/feb30": "2026-02-30", "/words": "yesterday", "/empty": ""}
    entries = "".join(f"<url><loc>http://s.test{path}</loc><lastmod>{value}</lastmod><changefreq>always</changefreq>"
                      "<priority>1.0</priority></url>" for path, value in dates.items())
    # the lastmod may come before the loc; a page without one has none
    entries += ("<url><lastmod>2026-11-02</lastmod><loc>http://s.test/first</loc></url>"
                "<url><loc>http://s.test/none</loc><changefreq>daily</changefreq></url>")
    sitemap = read_sitemap(f'<?xml version="1.0"?><urlset {NS}>{entries}</urlset>'.encode(), 1_000_000)
    assert dict(zip(sitemap.locs, sitemap.lastmods, strict=True)) == {
        "http://s.test/date": datetime(2026, 11, 1), "http://s.test/month": datetime(2026, 11, 1),
        "http://s.test/year": datetime(2026, 1, 1), "http://s.test/utc": datetime(2026, 11, 1, 10, 20, 30),
        "http://s.test/minutes": datetime(2026, 11, 1, 8, 20),
        "http://s.test/fraction": datetime(2026, 11, 1, 15, 50, 30, 250_000),
        **dict.fromkeys(f"http://s.test{p}" for p in ("/no-zone", "/spaced", "/month13", "/feb30", "/words", "/empty")),
        "http://s.test/first": datetime(2026, 11, 2), "http://s.test/none": None}
    assert sitemap.bad_lastmods == 6
    # an index's dates are its sitemaps', not pages': not kept, not counted
    nested = read_sitemap(index("http://s.test/1.xml"), 1_000_000)
    assert (nested.lastmods, nested.bad_lastmods) == ([None], 0)


def test_reader_bounds_decompression_and_size() -> None:
    bomb = gzip.compress(urlset(*[f"http://s.test/{i}" for i in range(20_000)]))
    sitemap = read_sitemap(bomb, 50_000)  # ~1.6 MB inflated: stopped at 50 kB, what came before kept
    assert sitemap.reason == "too_large" and 100 < len(sitemap.locs) < 1000
    cut = read_sitemap(b"http://s.test/1\nhttp://s.test/2\nhttp://s.te", 1_000_000, truncated=True)
    assert (cut.kind, cut.locs, cut.reason) == ("text", ["http://s.test/1", "http://s.test/2"], "too_large")


def test_sitemaps_are_read_politely_and_their_urls_recorded(server: FaultServer, tmp_path: Path) -> None:
    xml = {"content_type": "application/xml"}
    server.route("maps.test", "/robots.txt", respond(
        200, b"User-agent: *\nDisallow: /private\nSitemap: http://maps.test/index.xml\n"
             b"Sitemap: http://elsewhere.test/sitemap.xml\n", content_type="text/plain"))
    server.route("maps.test", "/", page("home"))
    server.route("maps.test", "/index.xml", respond(200, index(
        "/pages.xml", "http://maps.test/pages.xml.gz", "/broken.xml", "/huge.xml", "/nested.xml",
        "/private/secret.xml", "/missing.xml"), **xml))
    server.route("maps.test", "/pages.xml", respond(200, urlset(
        "http://maps.test/a", "/b", "http://other.test/c", "mailto:someone@maps.test", "http://maps.test/a",
        "http://maps.test/archive.zip"), **xml))
    # served as a file, gzip without Content-Encoding, the usual way of .xml.gz sitemaps
    server.route("maps.test", "/pages.xml.gz", respond(200, gzip.compress(urlset("http://maps.test/g")),
                                                       content_type="application/x-gzip"))
    server.route("maps.test", "/broken.xml", respond(200, urlset("http://maps.test/before")[:-40], **xml))
    server.route("maps.test", "/huge.xml", respond(200, urlset(*[f"http://maps.test/h{i}" for i in range(200)]),
                                                   **xml))
    server.route("maps.test", "/nested.xml", respond(200, index("/deeper.xml"), **xml))
    server.route("maps.test", "/deeper.xml", respond(200, urlset("http://maps.test/deep"), **xml))
    # no robots.txt at all, and a plain-text /sitemap.xml: read as the fallback
    server.route("plain.test", "/", page("plain home"))
    server.route("plain.test", "/sitemap.xml", respond(200, b"http://plain.test/t1\nhttp://plain.test/t2\n",
                                                       content_type="text/plain"))
    s = settings_for(server, sitemap_fallback=True, sitemap_max_depth=1, sitemap_max_bytes=4000, min_delay=0.05)
    log, requests, _ = run(["http://maps.test/", "http://plain.test/"], s, tmp_path)
    assert {r["outcome"] for r in log.values()} == {"fetched"}
    files = {r["url"]: (r["depth"], r["status"], r["kind"], r["entries"], r["admitted"], r["reason"] or "")
             for r in _rows(tmp_path / shard_files.SITEMAPS)}
    huge = files.pop("http://maps.test/huge.xml")
    broken = files.pop("http://maps.test/broken.xml")
    assert files == {
        "http://maps.test/index.xml": (0, 200, "sitemapindex", 7, 0, ""),
        "http://elsewhere.test/sitemap.xml": (0, None, None, 0, 0, "off_host"),
        "http://maps.test/pages.xml": (1, 200, "urlset", 6, 2, ""),
        "http://maps.test/pages.xml.gz": (1, 200, "urlset", 1, 1, ""),
        "http://maps.test/nested.xml": (1, 200, "sitemapindex", 1, 0, ""),
        "http://maps.test/private/secret.xml": (1, None, None, 0, 0, "robots_disallowed"),
        "http://maps.test/missing.xml": (1, 404, None, 0, 0, "http_error"),
        "http://maps.test/deeper.xml": (2, None, None, 0, 0, "depth_limit"),
        "http://plain.test/sitemap.xml": (0, 200, "text", 2, 2, ""),
    }
    assert broken[:3] == (1, 200, "urlset") and broken[4:] == (1, broken[5]) and broken[5].startswith("malformed_xml")
    assert huge[:3] == (1, 200, "urlset") and huge[5] == "too_large" and 0 < huge[4] == huge[3] < 200
    urls = {(r["url"], r["reason"]) for r in _rows(tmp_path / shard_files.SITEMAP_URLS)}
    admitted = {u for u, reason in urls if reason is None}
    assert admitted >= {"http://maps.test/a", "http://maps.test/b", "http://maps.test/g", "http://maps.test/before",
                        "http://plain.test/t1", "http://plain.test/t2", "http://maps.test/h0"}
    assert "http://maps.test/deep" not in admitted  # below the depth limit
    assert {(u, r) for u, r in urls if r} == {("http://other.test/c", "sitemap_off_host"),
                                              ("mailto:someone@maps.test", "bad_scheme"),
                                              ("http://maps.test/archive.zip", "binary_extension")}
    # Every sitemap request waited its turn like a page; other hosts' sitemaps are left to them.
    assert min(gaps(requests, "maps.test")) >= 0.05 and min(gaps(requests, "plain.test")) >= 0.05
    assert server.hits_of("elsewhere.test") == [] and "/deeper.xml" not in server.hits_of("maps.test")


def test_sitemap_urls_stop_at_the_host_cap(server: FaultServer, tmp_path: Path) -> None:
    server.route("cap.test", "/robots.txt", respond(200, b"Sitemap: http://cap.test/s.xml\n",
                                                    content_type="text/plain"))
    server.route("cap.test", "/s.xml", respond(200, urlset(*[f"http://cap.test/{i}" for i in range(5)])))
    server.route("cap.test", "/", page("home"))
    run(["http://cap.test/"], settings_for(server, max_urls_per_host=3), tmp_path)
    (record,) = _rows(tmp_path / shard_files.SITEMAPS)
    assert (record["entries"], record["admitted"], record["reason"]) == (5, 3, "url_cap")
    assert [r["url"] for r in _rows(tmp_path / shard_files.SITEMAP_URLS)] == [f"http://cap.test/{i}" for i in range(3)]


def _rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def test_the_reader_goes_down_indexes_in_order_within_the_file_limit(server: FaultServer, tmp_path: Path) -> None:
    server.route("m.test", "/index.xml", respond(200, index("/a.xml", "/b.xml", "/c.xml")))
    server.route("m.test", "/a.xml", respond(200, urlset("http://m.test/1", "http://m.test/2")))
    server.route("m.test", "/b.xml", respond(200, urlset("http://m.test/2", "http://m.test/3")))
    server.route("m.test", "/s.xml", respond(200, urlset("http://m.test/s")))
    s = settings_for(server, sitemap_max_files=3, min_delay=0.05)
    with host_loop(s, "m.test", tmp_path) as loop:
        loop.sitemaps.read([("/index.xml", "http://m.test/robots.txt"), ("http://m.test/s.xml", "http://m.test/")])
        requests = loop.requests.recorder.requests
    # first come, first read: the second listed sitemap before the index's; the third file is the last one fetched
    assert [(f["url"].removeprefix("http://m.test"), f["depth"], f["reason"]) for f in loop.sitemaps.files] == [
        ("/index.xml", 0, None), ("/s.xml", 0, None), ("/a.xml", 1, None), ("/b.xml", 1, "file_limit"),
        ("/c.xml", 1, "file_limit")]
    assert [u["url"] for u in loop.sitemaps.urls] == ["http://m.test/s", "http://m.test/1", "http://m.test/2"]
    # robots.txt asked before the first sitemap, every request at its turn
    assert server.hits_of("m.test") == ["/robots.txt", "/index.xml", "/s.xml", "/a.xml"]
    assert min(gaps(requests, "m.test")) >= 0.05


def test_a_stopped_host_reads_no_sitemap_and_says_why(server: FaultServer, tmp_path: Path) -> None:
    server.route("m.test", "/*", respond(200, urlset("http://m.test/1")))
    with host_loop(settings_for(server), "m.test", tmp_path, stored={"backoff_until": time.time() + 60}) as loop:
        loop.sitemaps.read([("/s.xml", "http://m.test/robots.txt"), ("http://o.test/s.xml", "http://m.test/")])
    assert [(f["url"], f["reason"]) for f in loop.sitemaps.files] == [
        ("http://m.test/s.xml", "retry_after"), ("http://o.test/s.xml", "off_host")]
    assert server.hits == [] and loop.sitemaps.urls == []


def test_a_sitemap_follows_redirects_on_its_host_only(server: FaultServer, tmp_path: Path) -> None:
    server.route("m.test", "/moved.xml", redirect("/s.xml", 301))
    server.route("m.test", "/away.xml", redirect("http://o.test/s.xml", 301))
    server.route("m.test", "/s.xml", respond(200, urlset("http://m.test/1")))
    server.route("o.test", "/s.xml", respond(200, urlset("http://o.test/1")))
    with host_loop(settings_for(server, min_delay=0.0), "m.test", tmp_path) as loop:
        loop.sitemaps.read([("/moved.xml", "http://m.test/robots.txt"), ("/away.xml", "http://m.test/robots.txt")])
    assert [(f["url"], f["status"], f["reason"]) for f in loop.sitemaps.files] == [
        ("http://m.test/moved.xml", 200, None), ("http://m.test/away.xml", 301, "http_error")]
    assert [u["url"] for u in loop.sitemaps.urls] == ["http://m.test/1"] and server.hits_of("o.test") == []
