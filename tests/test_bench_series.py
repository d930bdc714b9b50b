"""bench/series.py: a release's WARC serves, on loopback, what a static server gives from a package's HTML root, with
nginx's validators; the change measure counts what moved between two releases; a broken spec stops in one line."""

from __future__ import annotations

import http.client
import json
import os
import random
import sys
from email.utils import formatdate
from pathlib import Path

import pytest

from crawlcycle.devtools.warc_server import serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import series  # noqa: E402

DATE = "2024-01-02T03:04:05Z"
ROBOTS_MTIME = 1_628_899_200  # 2021-08-14
WORDS = [f"word{i}" for i in range(400)]


def package(root: Path, files: dict[str, str], mtime: int) -> Path:
    """An unpacked package's HTML root holding ``files``, every file dated ``mtime`` as in a .deb."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (mtime, mtime))
    return root


def page(title: str, seed: int, words: int = 300, edit: str | None = None) -> str:
    """A documentation page whose article text is ``words`` words drawn by ``seed``; ``edit`` replaces one."""
    text = random.Random(seed).choices(WORDS, k=words)
    if edit:
        text[words // 2] = edit
    paragraphs = "".join(f"<p>{' '.join(text[i:i + 50])}.</p>" for i in range(0, words, 50))
    return (f"<html><head><title>{title}</title></head>"
            f"<body><article><h1>{title}</h1>{paragraphs}</article></body></html>")


def get(port: int, url: str) -> tuple[int, dict[str, str], bytes]:
    host, _, path = url.removeprefix("http://").partition("/")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/" + path, headers={"Host": host})
    resp = conn.getresponse()
    out = resp.status, dict(resp.getheaders()), resp.read()
    conn.close()
    return out


def test_a_release_serves_a_package_as_a_static_server_would_with_nginx_validators(tmp_path: Path) -> None:
    spec = {"hosts": [
        {"host": "a.docs.test", "aliases": ["https://b.example.org/"],
         "releases": {"r1": {"package": "a-doc", "root": "usr/share/doc/a/html"}}},
        {"host": "b.docs.test", "aliases": ["https://b.example.org/en/latest/"],
         "releases": {"r1": {"package": "b-doc", "root": "usr/share/doc/b/html"}}}]}
    links = ('<a href="/usr/share/doc/b/html/page.html">b</a> <a href="file:///usr/share/doc/b/html/x.html">x</a> '
             '<a href="https://b.example.org/en/latest/y.html">y</a> <a href="https://b.example.org/about.html">a</a> '
             '<a href="https://elsewhere.org/z">z</a>')  # the longest alias wins: /en/latest/ is b's, the rest a's
    a = package(tmp_path / "a" / "usr/share/doc/a/html", {
        "index.html": f"<html><body>{links}</body></html>", "style.css": "body {}",
        "_sources/index.rst.txt": "index\n=====\n", "git-log.txt": "the AsciiDoc copy"}, 1_700_000_000)
    (a / "home.html").symlink_to("index.html")
    (a / "jquery.js").symlink_to("/usr/share/javascript/nowhere/jquery.js")  # Debian's shared scripts: dangling
    b = package(tmp_path / "b" / "usr/share/doc/b/html", {"page.html": "<html><body>b</body></html>"}, 1_600_000_000)
    sites = [series.Site("a.docs.test", "a-doc", "1.0", a, b"User-agent: *\nDisallow: /_sources/\n"),
             series.Site("b.docs.test", "b-doc", "2:3.1-1", b, b"User-agent: *\nDisallow:\n")]
    warc = tmp_path / "r1.warc.gz"
    counts = series.write_release(warc, "r1", DATE, sites, series.link_rewriter(spec, "r1"), ROBOTS_MTIME)
    assert counts == {"a.docs.test": (2, 4), "b.docs.test": (1, 2)}  # index, home, style.css, robots.txt

    with serve([warc]) as handle:
        status, headers, body = get(handle.port, "http://a.docs.test/index.html")
        assert status == 200
        assert headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT" == formatdate(1_700_000_000, usegmt=True)
        assert headers["ETag"] == f'"6553f100-{len(body):x}"'  # nginx: "<mtime hex>-<length hex>"
        assert (b'href="http://b.docs.test/page.html"' in body and b'href="http://b.docs.test/x.html"' in body
                and b'href="http://b.docs.test/y.html"' in body and b'href="http://a.docs.test/about.html"' in body
                and b'href="https://elsewhere.org/z"' in body)
        assert get(handle.port, "http://a.docs.test/home.html")[1:] == (headers, body)  # a link serves its target
        assert get(handle.port, "http://a.docs.test/style.css")[1]["Content-Type"] == "text/css"
        for gone in ("_sources/index.rst.txt", "git-log.txt", "jquery.js"):
            assert get(handle.port, f"http://a.docs.test/{gone}")[0] == 404, gone
        status, headers, body = get(handle.port, "http://a.docs.test/robots.txt")
        assert (status, body) == (200, sites[0].robots)
        assert headers["ETag"] == f'"61170780-{len(body):x}"'
    info, pages = series.read_release(warc, tmp_path / "parsed", 1)
    assert info["packages"] == "a-doc=1.0 b-doc=2:3.1-1" and info["archive-date"] == DATE
    assert sorted(pages["url"]) == ["http://a.docs.test/home.html", "http://a.docs.test/index.html",
                                    "http://b.docs.test/page.html"]


def test_a_step_counts_urls_added_removed_kept_and_what_changed_in_the_kept_pages(tmp_path: Path) -> None:
    spec = {"hosts": [{"host": "a.docs.test", "releases": {
        r: {"package": "a-doc", "root": "usr/share/doc/a/html"} for r in ("r1", "r2")}}]}
    first = {"same.html": page("Same", 1), "edit.html": page("Edit", 2), "rewritten.html": page("Rewritten", 3),
             "gone.html": page("Gone", 4)}
    second = {"same.html": page("Same", 1), "edit.html": page("Edit", 2, edit="changed"),
              "rewritten.html": page("Rewritten", 5), "added.html": page("Added", 6)}
    frames = []
    for release, files, mtime in (("r1", first, 1_700_000_000), ("r2", second, 1_600_000_000)):
        root = package(tmp_path / release / "usr/share/doc/a/html", files, mtime)
        warc = tmp_path / f"{release}.warc.gz"
        series.write_release(warc, release, DATE, [series.Site("a.docs.test", "a-doc", release, root, b"")],
                             series.link_rewriter(spec, release), ROBOTS_MTIME)
        frames.append(series.read_release(warc, tmp_path / "parsed", 1)[1])
    assert frames[0].filter(frames[0]["url"].str.ends_with("/edit.html"))["text"].item().count("word") > 250

    assert series.step(*frames) == {
        "before": 4, "after": 4, "kept": 3, "added": 1, "removed": 1,
        "bytes": 2, "text": 2, "rewritten": 1,  # one word of 300 is an edit, another text is a rewrite
        "etag": 3, "same_bytes_new_etag": 1,  # every file of the new package has the new date
        "earlier": 3}


def test_a_broken_spec_stops_in_one_line_naming_the_file(tmp_path: Path) -> None:
    spec = tmp_path / "series.json"
    spec.write_text(json.dumps({"mirror": "http://deb.debian.org/debian", "releases": ["bookworm"],
                                "robots_modified": "2021-08-14T00:00:00Z", "hosts": [
                                    {"host": "a.docs.test", "releases": {"bokworm": {"package": "a", "root": "a"}}}]}))
    with pytest.raises(SystemExit) as stop:
        series.load_spec(spec)
    assert str(stop.value).startswith(f"{spec}: not a series spec") and "'bokworm'" in str(stop.value)
    assert "\n" not in str(stop.value)
