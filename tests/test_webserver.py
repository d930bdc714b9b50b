"""The WARC web server, over real HTTP on loopback, against a generated web and the real dev-docs WARC."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import select
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlcycle.devtools.demo_web import generate
from crawlcycle.devtools.warc_server import (
    FIXED_DATE,
    NOT_FOUND,
    Series,
    ServerHandle,
    WarcWeb,
    canonical_target,
    serve,
)


def fetch(port: int, host: str, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes, float]:
    """One request with an explicit Host header; returns status, headers, body and seconds taken."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    start = time.monotonic()
    conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host)
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read()
    elapsed = time.monotonic() - start
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body, elapsed


def warc_records(path: Path) -> dict[str, tuple[str, list[tuple[str, str]], bytes]]:
    out = {}
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            out[rec.rec_headers.get_header("WARC-Target-URI")] = (
                rec.http_headers.statusline, rec.http_headers.headers, rec.content_stream().read())
    return out


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    web = generate(tmp_path_factory.mktemp("demo"), hosts=8, pages=400, seed=3)
    behaviour = json.loads(web.behaviour.read_text())
    with serve([web.warc], behaviour=behaviour) as server:
        yield web, server, warc_records(web.warc), behaviour


def test_replays_recorded_page(demo) -> None:
    web, server, records, _ = demo
    url = next(u for u, (status, _, _) in records.items() if "/guides/" in u and status == "200 OK")
    host, path = url.split("/", 3)[2], "/" + url.split("/", 3)[3]
    status, headers, body, _ = fetch(server.port, host, path)
    assert status == 200
    assert body == records[url][2]
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-length"] == str(len(body))
    assert headers["date"] == dict(records[url][1])["Date"]
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_host_header_picks_the_site(demo) -> None:
    _, server, records, _ = demo
    hosts = sorted({u.split("/")[2] for u in records})[:2]
    bodies = [fetch(server.port, h, "/")[2] for h in hosts]
    assert bodies[0] != bodies[1]
    assert bodies[0] == records[f"http://{hosts[0]}/"][2]
    # Port and letter case of the Host header do not matter.
    assert fetch(server.port, hosts[1].upper() + ":80", "/")[2] == bodies[1]
    assert fetch(server.port, "unknown.demo.test", "/")[0] == 404


def test_missing_urls_and_robots(demo) -> None:
    _, server, records, _ = demo
    hosts = {u.split("/")[2] for u in records}
    without = [h for h in hosts if f"http://{h}/robots.txt" not in records]
    assert len(without) == 1
    assert fetch(server.port, without[0], "/robots.txt")[0] == 404
    status, _, body, _ = fetch(server.port, sorted(hosts)[0], "/guides/no-such-page.html")
    assert status == 404 and b"not in the snapshot" in body
    robots = [fetch(server.port, h, "/robots.txt")[2] for h in hosts - set(without)]
    assert sum(b"Crawl-delay: 0.2" in r for r in robots) == 1


def test_redirect_is_replayed_not_followed(demo) -> None:
    _, server, records, _ = demo
    url, (statusline, headers, _) = next((u, r) for u, r in records.items() if r[0].startswith("301"))
    status, got, _, _ = fetch(server.port, url.split("/")[2], "/" + url.split("/", 3)[3])
    assert status == 301
    assert got["location"] == dict(headers)["Location"]


def test_head_sends_headers_only(demo) -> None:
    _, server, records, _ = demo
    host = next(u for u in records if u.endswith(".png")).split("/")[2]
    path = "/" + next(u for u in records if u.endswith(".png")).split("/", 3)[3]
    status, headers, body, _ = fetch(server.port, host, path, method="HEAD")
    assert (status, body) == (200, b"")
    assert headers["content-type"] == "image/png"
    assert int(headers["content-length"]) == len(fetch(server.port, host, path)[2]) > 0


def test_slow_host_waits(demo) -> None:
    _, server, records, behaviour = demo
    (slow, rule), = ((host, rule) for host, rule in behaviour.items() if "delay" in rule)
    fast = next(u.split("/")[2] for u in records if slow not in u)
    assert fetch(server.port, slow, "/")[3] >= rule["delay"]
    # The wait holds that host's answer only: another host, asked while it waits, answers first.
    held = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    held.putrequest("GET", "/", skip_host=True, skip_accept_encoding=True)
    held.putheader("Host", slow)
    held.endheaders()
    assert fetch(server.port, fast, "/")[0] == 200
    slow_answered_first = bool(select.select([held.sock], [], [], 0)[0])
    assert held.getresponse().status == 200
    held.close()
    assert not slow_answered_first


def test_percent_encoding_is_matched_canonically(demo) -> None:
    _, server, records, _ = demo
    url = next(u for u in records if "/~editor/" in u)
    host = url.split("/")[2]
    direct = fetch(server.port, host, "/~editor/profile.html")
    assert direct[0] == 200
    assert fetch(server.port, host, "/%7Eeditor/profile.html")[2] == direct[2]
    assert fetch(server.port, host, "/%7eeditor/profile.html")[2] == direct[2]
    # Exact otherwise: a trailing slash is another URL.
    assert fetch(server.port, host, "/~editor/profile.html/")[0] == 404
    assert canonical_target(b"/a%2fb%3F/%e2%82%ac x?q=%7e#frag") == "/a%2Fb%3F/%E2%82%AC%20x?q=~"


def test_absolute_form_target(demo) -> None:
    _, server, records, _ = demo
    host = sorted({u.split("/")[2] for u in records})[0]
    status, _, body, _ = fetch(server.port, "127.0.0.1", f"http://{host}/")
    assert status == 200 and body == records[f"http://{host}/"][2]


def test_logging_only_when_asked(demo, capfd: pytest.CaptureFixture[str]) -> None:
    web, server, _, _ = demo
    fetch(server.port, "astronomy.demo.test", "/")
    assert capfd.readouterr().err == ""
    with serve([web.warc], log=True) as loud:
        fetch(loud.port, "astronomy.demo.test", "/nope")
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and 'astronomy.demo.test "GET /nope HTTP/1.1" 404' in err


def test_plain_warc_with_encoded_chunked_record(tmp_path: Path) -> None:
    """An uncompressed WARC whose record was gzip-encoded and chunked on the wire: the body is
    served decoded with a fresh length; a URL recorded twice answers with its last record."""
    page = b"<html><title>hello</title></html>"
    packed = gzip.compress(page, mtime=0)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
    path = tmp_path / "plain.warc"
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=False)
        for body, headers in [
            (b"old", [("Content-Type", "text/plain")]),
            (chunked, [("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                       ("Transfer-Encoding", "chunked"), ("Connection", "keep-alive"), ("X-Kept", "1")]),
        ]:
            writer.write_record(writer.create_warc_record(
                "http://Example.test:8080/a%7eb?x=1", "response", payload=io.BytesIO(body),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")))
    web = WarcWeb([path])
    assert len(web) == 1 and web.hosts() == {"example.test"}
    with serve([path]) as server:
        status, headers, body, _ = fetch(server.port, "example.test", "/a~b?x=1")
    assert (status, body) == (200, page)
    assert headers["content-length"] == str(len(page)) and headers["x-kept"] == "1"
    assert not {"content-encoding", "transfer-encoding"} & headers.keys()
    assert headers.get("connection") != "keep-alive"


def test_real_dev_docs_snapshot(dev_docs: Path) -> None:
    web = WarcWeb([dev_docs])
    assert {"python.docs.test", "sqlite.docs.test", "django.docs.test"} <= web.hosts()
    with serve([dev_docs]) as server:
        status, headers, body, _ = fetch(server.port, "python.docs.test", "/index.html")
        assert status == 200 and b"<title>3.11.2 Documentation</title>" in body
        assert headers["content-type"] == "text/html; charset=utf-8"
        status, _, body, _ = fetch(server.port, "sqlite.docs.test", "/index.html")
        assert status == 200 and b"<title>SQLite Home Page</title>" in body
        assert fetch(server.port, "python.docs.test", "/robots.txt")[2] == (
            b"User-agent: *\nDisallow: /_sources/\nCrawl-delay: 1\n")
        # sqlite.docs.test recorded two robots.txt (the package's own, then the snapshot's): last wins.
        assert fetch(server.port, "sqlite.docs.test", "/robots.txt")[2] == b"User-agent: *\nCrawl-delay: 2\n"
        # the host's root is a directory whose index file the snapshot holds: redirected there, as a static server
        status, headers, _, _ = fetch(server.port, "python.docs.test", "/")
        assert (status, headers["location"]) == (301, "/index.html")
        assert fetch(server.port, "python.docs.test", "/whatsnew/changelog.html")[0] == 404


# A web that changes: versions of one host, each a WARC with validators as nginx sends them.
V1_DATE, V2_DATE = "Tue, 03 Nov 2026 10:00:00 GMT", "Mon, 02 Nov 2026 09:00:00 GMT"  # the date goes back


def write_version(path: Path, pages: dict[str, bytes], modified: str, validators: bool = True) -> Path:
    """A WARC of 200 responses of host a.test, each with ``modified`` as Last-Modified and an nginx-style ETag."""
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        for target, body in pages.items():
            headers = [("Content-Type", "text/html"), ("Date", modified)]
            if validators:
                headers += [("Last-Modified", modified), ("ETag", f'"{abs(hash((modified, body))):x}-{len(body):x}"')]
            writer.write_record(writer.create_warc_record(
                f"http://a.test{target}", "response", payload=io.BytesIO(body),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")))
    return path


def conditional(port: int, target: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", target, headers={"Host": "a.test", **{k.replace("_", "-"): v for k, v in headers.items()}})
    resp = conn.getresponse()
    out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    conn.close()
    return out


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("series")
    kept = {f"/kept/{i}.html": f"<p>kept {i}</p>".encode() for i in range(40)}
    v1 = {"/a.html": b"<p>one</p>", "/same.html": b"<p>same</p>", "/dropped.html": b"<p>soon gone</p>", **kept}
    v2 = {"/a.html": b"<p>two</p>", "/same.html": b"<p>same</p>", "/new.html": b"<p>new</p>",
          **{t: b.replace(b"kept", b"changed") for t, b in kept.items()}}
    return write_version(d / "v1.warc.gz", v1, V1_DATE), write_version(d / "v2.warc.gz", v2, V2_DATE)


def test_series_at_start_serves_each_version_from_its_start(versions: tuple[Path, Path]) -> None:
    v1, v2 = versions
    web = Series([([v1], 1), ([v2], 4)], switch="at-start")
    with serve(web) as server:
        for t in (1, 2, 3):
            server.set_time(t)
            assert conditional(server.port, "/a.html")[2] == b"<p>one</p>"
            assert conditional(server.port, "/new.html")[0] == 404  # not published yet
            assert conditional(server.port, "/dropped.html")[0] == 200
            assert web.version_of("http://a.test/a.html", t) == 0
        server.set_time(4)
        assert conditional(server.port, "/a.html")[2] == b"<p>two</p>"
        assert conditional(server.port, "/new.html")[2] == b"<p>new</p>"  # a page new in a version appears
        assert conditional(server.port, "/dropped.html")[0] == 404  # one it dropped is gone
        assert web.version_of("http://a.test/a.html", 4) == 1
        assert web.first_switch() == 4


def _switches(handle: ServerHandle, targets: list[str], times: range) -> dict[str, int]:
    """The first time each target answered as its second version (changed, published or gone), seen over HTTP."""
    first: dict[str, int] = {}
    for t in times:
        handle.set_time(t)
        for target in targets:
            status, _, body = conditional(handle.port, target)
            moved = status == 404 if target == "/dropped.html" else status == 200 and b"kept" not in body
            if moved:
                first.setdefault(target, t)
    return first


def test_drawn_switches_are_seeded_and_fall_between_the_starts(versions: tuple[Path, Path]) -> None:
    v1, v2 = versions
    targets = [f"/kept/{i}.html" for i in range(40)] + ["/new.html", "/dropped.html"]
    seen: dict[int, list[dict[str, int]]] = {}
    for seed in (7, 7, 8):
        web = Series([([v1], 1), ([v2], 6)], seed=seed)
        with serve(web) as server:
            seen.setdefault(seed, []).append(_switches(server, targets, range(1, 8)))
        # what the server did is what the series says it does
        assert seen[seed][-1] == {t: web.switch_time(("a.test", t), 0) for t in targets}
    first, again = seen[7]
    assert first == again  # the same seed moves the same URLs at the same cycles
    assert first != seen[8][0]
    assert set(first) == set(targets)  # every URL moved by the second version's start
    assert set(first.values()) == {2, 3, 4, 5, 6}  # drawn over the cycles after the first start, up to the second


def test_conditional_requests_are_answered_from_the_served_validators(versions: tuple[Path, Path]) -> None:
    v1, v2 = versions
    with serve(Series([([v1], 1), ([v2], 2)], switch="at-start")) as server:
        status, headers, body = conditional(server.port, "/a.html")
        etag, modified = headers["etag"], headers["last-modified"]
        assert (status, modified) == (200, V1_DATE)
        status, headers304, body = conditional(server.port, "/a.html", If_None_Match=etag)
        assert (status, body) == (304, b"")
        assert (headers304["etag"], headers304["last-modified"]) == (etag, modified)
        assert "content-length" not in headers304
        assert conditional(server.port, "/a.html", If_None_Match=f'"x", W/{etag}')[0] == 304  # weak comparison
        assert conditional(server.port, "/a.html", If_None_Match="*")[0] == 304
        assert conditional(server.port, "/a.html", If_Modified_Since=V1_DATE)[0] == 304
        # If-None-Match decides alone: a stale tag gets the page even with a matching date
        assert conditional(server.port, "/a.html", If_None_Match='"stale"', If_Modified_Since=V1_DATE)[0] == 200
        assert conditional(server.port, "/nowhere.html", If_None_Match="*")[0] == 404
        server.set_time(2)
        # the page changed and its Last-Modified went back: only an exact match is "not modified"
        assert conditional(server.port, "/a.html", If_Modified_Since=V1_DATE)[:3:2] == (200, b"<p>two</p>")
        assert conditional(server.port, "/a.html", If_None_Match=etag)[0] == 200
        assert conditional(server.port, "/same.html", If_Modified_Since=V2_DATE)[0] == 304


def test_hosts_that_ignore_conditions_lie_or_send_no_validators(versions: tuple[Path, Path]) -> None:
    v1, v2 = versions
    web = Series([([v1], 1), ([v2], 2)], switch="at-start")
    kinds = {"ignores": {"conditional": False}, "lies": {"validators": "fixed-date"}, "bare": {"validators": "none"}}
    for kind, rule in kinds.items():
        with serve(web, behaviour={"a.test": rule}) as server:
            status, headers, _ = conditional(server.port, "/a.html")
            tags = {k: headers.get(k) for k in ("etag", "last-modified")}
            asked = {"If_None_Match": tags["etag"] or '"none"', "If_Modified_Since": tags["last-modified"] or V1_DATE}
            if kind == "ignores":
                assert tags["etag"] and tags["last-modified"] == V1_DATE
                assert conditional(server.port, "/a.html", **asked)[:3:2] == (200, b"<p>one</p>")
            elif kind == "lies":
                assert tags == {"etag": None, "last-modified": FIXED_DATE}
                server.set_time(2)  # the page changed; its date did not
                status, headers, body = conditional(server.port, "/a.html", If_Modified_Since=FIXED_DATE)
                assert (status, body, headers["last-modified"]) == (304, b"", FIXED_DATE)
            else:
                assert tags == {"etag": None, "last-modified": None}
                assert conditional(server.port, "/a.html", If_Modified_Since=V1_DATE)[0] == 200
                assert conditional(server.port, "/a.html", If_None_Match="*")[0] == 304  # "*": any current page


def test_the_live_web_of_a_time_is_one_warc_of_what_it_serves(versions: tuple[Path, Path], tmp_path: Path) -> None:
    v1, v2 = versions
    web = Series([([v1], 1), ([v2], 6)], seed=3)
    written = web.write_live(4, tmp_path / "live.warc.gz")
    live = warc_records(tmp_path / "live.warc.gz")
    assert written == len(live)
    with serve(web) as server:
        server.set_time(4)
        for target in ("/a.html", "/same.html", "/new.html", "/dropped.html", *(f"/kept/{i}.html" for i in range(40))):
            status, _, body = conditional(server.port, target)
            url = f"http://a.test{target}"
            assert (status, body) == ((200, live[url][2]) if url in live else (404, NOT_FOUND.body))
    assert web.served(4) != web.served(5) and web.served(6) == web.served(7)


def test_directories_are_answered_as_a_static_server_with_an_index_file_answers_them(tmp_path: Path) -> None:
    pages = {"/guide/index.html": b"<p>guide</p>", "/api/": b"<p>recorded at its slash</p>", "/notes": b"<p>file</p>",
             "/v2/guide/index.html": b"<p>guide two</p>"}
    web = Series([([write_version(tmp_path / "v1.warc.gz", pages, V1_DATE)], 1),
                  ([write_version(tmp_path / "v2.warc.gz", {"/other.html": b"<p>o</p>"}, V2_DATE)], 3)],
                 switch="at-start")
    with serve(web) as server:
        server.set_time(1)
        status, headers, _ = conditional(server.port, "/guide/")
        assert (status, headers["location"]) == (301, "/guide/index.html")
        assert conditional(server.port, "/guide/?page=2")[1]["location"] == "/guide/index.html?page=2"
        status, headers, _ = conditional(server.port, "/v2/guide")  # named without its slash: first to the slash
        assert (status, headers["location"]) == (301, "/v2/guide/")
        assert conditional(server.port, "/api/")[2] == b"<p>recorded at its slash</p>"  # a record wins
        assert conditional(server.port, "/notes")[2] == b"<p>file</p>"
        assert conditional(server.port, "/missing/")[0] == 404  # no index file: no directory
        assert conditional(server.port, "/guide/index.htm")[0] == 404  # a file's name is never a directory
        server.set_time(3)  # the version that dropped the index file drops its directory too
        assert conditional(server.port, "/guide/")[0] == 404
