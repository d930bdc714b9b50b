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
from crawlcycle.devtools.warc_server import WarcWeb, canonical_target, serve


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
    (slow, rule), = behaviour.items()
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
        assert fetch(server.port, "python.docs.test", "/")[0] == 404
        assert fetch(server.port, "python.docs.test", "/whatsnew/changelog.html")[0] == 404
