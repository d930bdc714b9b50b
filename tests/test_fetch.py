"""The fetcher against real misbehaving servers on loopback; outcomes and politeness read back from its files."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.fetch import FETCH_LOG_SCHEMA, OUTCOMES, fetch_urls
from crawlcycle.settings import Settings, load_settings
from tests.faultserver import (
    FaultServer,
    chunked,
    gzipped,
    hang,
    page,
    redirect,
    reset_mid_body,
    respond,
    trickle,
)

UA = "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"


@pytest.fixture
def server():
    s = FaultServer()
    yield s
    s.close()


def settings_for(server: FaultServer, **overrides: object) -> Settings:
    base = {"user_agent": UA, "connect_to": f"*.test=127.0.0.1:{server.port}", "allow_networks": "127.0.0.0/8",
            "min_delay": 0.1, "max_delay": 1.0, "delay_factor": 1.0, "connect_timeout": 0.5,
            "read_timeout": 0.3, "total_deadline": 0.8, "max_body_bytes": 50_000, "robots_max_bytes": 10_000,
            "fetch_time_limit": 20.0, "fetch_concurrency": 8}
    return load_settings(overrides=base | overrides, environ={})


def run(urls: list[str], settings: Settings, out: Path, hosts: list[dict] | None = None):
    """Fetch, then read back (log by URL, requests, hosts by name) from the written files."""
    result = fetch_urls(urls, settings, out, hosts)
    log = pq.read_table(result.fetch_log)
    assert log.schema.equals(FETCH_LOG_SCHEMA)
    rows = log.to_pylist()
    assert [r["url"] for r in rows] == list(dict.fromkeys(urls))  # one row per input URL, in order
    assert all(r["outcome"] in OUTCOMES for r in rows)
    requests = pq.read_table(result.requests).to_pylist()
    host_rows = {r["host"]: r for r in pq.read_table(result.hosts).to_pylist()}
    return {r["url"]: r for r in rows}, requests, host_rows


def gaps(requests: list[dict], host: str) -> list[float]:
    """Idle time between consecutive requests to ``host``: next start minus previous finish."""
    reqs = sorted((r for r in requests if r["host"] == host), key=lambda r: r["started_at"])
    for a, b in zip(reqs, reqs[1:], strict=False):
        assert b["started_at"] >= a["finished_at"], "two requests in flight to one host"
    return [b["started_at"] - a["finished_at"] for a, b in zip(reqs, reqs[1:], strict=False)]


def warc_records(path: Path) -> list[tuple[str, str, dict, bytes]]:
    out = []
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            http = dict(rec.http_headers.headers) if rec.http_headers else {}
            out.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"),
                        dict(rec.rec_headers.headers) | {"http": http}, rec.content_stream().read()))
    return out


def test_polite_fetch_records_everything_and_reuses_robots(server: FaultServer, tmp_path: Path) -> None:
    robots = (b"User-agent: *\nDisallow: /\n\nUser-agent: crawlcycle\nDisallow: /private\nCrawl-delay: 0.2\n"
              b"Sitemap: http://site.test/sitemap.xml\n")
    server.route("site.test", "/robots.txt", respond(200, robots, content_type="text/plain"))
    server.route("site.test", "/a", page("A", content_type="Text/HTML; Charset=UTF-8"))
    server.route("site.test", "/b", chunked([b"<html><body>", b"chunked body", b"</body></html>"]))
    server.route("site.test", "/gz", gzipped(b"<html>" + b"small " * 100 + b"</html>"))
    urls = ["http://site.test/a", "http://site.test/b", "http://site.test/gz", "http://site.test/private/x",
            "http://site.test/a"]
    s = settings_for(server)
    log, requests, hosts = run(urls, s, tmp_path)

    assert {u: r["outcome"] for u, r in log.items()} == {
        "http://site.test/a": "fetched", "http://site.test/b": "fetched", "http://site.test/gz": "fetched",
        "http://site.test/private/x": "disallowed"}
    a = log["http://site.test/a"]
    assert (a["status"], a["content_type"], a["final_url"], a["error_class"]) == (200, "text/html", a["url"], None)
    assert a["started_at"] < a["finished_at"] and a["elapsed_ms"] > 0
    assert log["http://site.test/gz"]["bytes"] == len(b"<html>" + b"small " * 100 + b"</html>")
    assert log["http://site.test/private/x"]["started_at"] is None
    assert "/private/x" not in server.hits_of("site.test")
    # robots.txt first, then the pages, each gap at least the Crawl-delay
    assert [r["url"] for r in sorted(requests, key=lambda r: r["started_at"])][0] == "http://site.test/robots.txt"
    assert len(requests) == 4 and min(gaps(requests, "site.test")) >= 0.2
    host = hosts["site.test"]
    assert (host["robots_status"], host["crawl_delay"], host["sitemaps"]) == \
        (200, 0.2, ["http://site.test/sitemap.xml"])
    assert host["robots_txt"] == robots.decode() and host["delay"] >= 0.2 and host["errors"] == 0

    records = warc_records(tmp_path / "responses.warc.gz")
    assert [u for t, u, _, _ in records if t == "request"] == [u for t, u, _, _ in records if t == "response"]
    assert {u for t, u, _, _ in records} == {"http://site.test/robots.txt", "http://site.test/a",
                                            "http://site.test/b", "http://site.test/gz"}
    by_uri = {(t, u): (h, body) for t, u, h, body in records}
    req_headers, _ = by_uri[("request", "http://site.test/a")]
    assert req_headers["http"]["User-Agent"] == UA and req_headers["http"]["Host"] == "site.test"
    assert by_uri[("response", "http://site.test/b")][1] == b"<html><body>chunked body</body></html>"
    gz_headers, gz_body = by_uri[("response", "http://site.test/gz")]
    assert gz_body.startswith(b"<html>small") and gz_headers["http"]["X-Crawler-Content-Encoding"] == "gzip"
    assert gz_headers["WARC-IP-Address"] == "127.0.0.1"

    # Second call: robots.txt comes from the hosts rows; the files are replaced, not appended to.
    log2, requests2, _ = run(urls, s, tmp_path, hosts=list(hosts.values()))
    assert len(log2) == 4 and [r["url"] for r in requests2].count("http://site.test/robots.txt") == 0
    assert len(requests2) == 3 and min(gaps(requests2, "site.test")) >= 0.2
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["fetch_log.parquet", "hosts.parquet", "requests.parquet", "responses.warc.gz"]


def test_trickling_body_is_cut_at_the_total_deadline(server: FaultServer, tmp_path: Path) -> None:
    server.route("trickle.test", "/slow", trickle(200, 0.05))
    server.route("trickle.test", "/next", page("next"))
    s = settings_for(server, total_deadline=0.6, read_timeout=0.3)
    log, requests, hosts = run(["http://trickle.test/slow", "http://trickle.test/next"], s, tmp_path)
    slow = log["http://trickle.test/slow"]
    assert (slow["error_class"], slow["outcome"], slow["status"]) == ("timeout", "retry_pending", None)
    assert 600 <= slow["elapsed_ms"] < 1500  # the whole body would take 10 s
    assert log["http://trickle.test/next"]["outcome"] == "fetched"
    # the adaptive delay after a 0.6 s response is at least delay_factor (1.0) x 0.6 s
    assert gaps(requests, "trickle.test")[-1] >= 0.6


def test_hung_connection_times_out_on_read(server: FaultServer, tmp_path: Path) -> None:
    server.route("hung.test", "/", hang())
    server.route("hung.test", "/after", page("after"))
    s = settings_for(server, read_timeout=0.3, total_deadline=3.0)
    log, requests, _ = run(["http://hung.test/", "http://hung.test/after"], s, tmp_path)
    row = log["http://hung.test/"]
    assert (row["error_class"], row["outcome"]) == ("timeout", "retry_pending")
    assert 300 <= row["elapsed_ms"] < 1500  # the read timeout, well before the total deadline
    assert log["http://hung.test/after"]["outcome"] == "fetched"
    assert gaps(requests, "hung.test")[-1] >= 0.3  # delay_factor 1.0 x the 0.3 s spent waiting
    records = warc_records(tmp_path / "responses.warc.gz")
    assert [(t, u) for t, u, _, _ in records if u == row["url"]] == [("request", row["url"])]


def test_gzip_bomb_is_stopped_at_the_size_limit(server: FaultServer, tmp_path: Path) -> None:
    server.route("bomb.test", "/bomb", gzipped(b"\0" * 20_000_000))
    server.route("bomb.test", "/warm", gzipped(b"warm-up: every module the fetcher loads is loaded"))
    s = settings_for(server, max_body_bytes=50_000, total_deadline=5.0)
    run(["http://bomb.test/warm"], s, tmp_path)
    tracemalloc.start()
    try:
        log, requests, _ = run(["http://bomb.test/bomb"], s, tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000  # never inflated beyond the limit (20 MB would be)
    row = log["http://bomb.test/bomb"]
    assert (row["outcome"], row["truncated"], row["bytes"], row["error_class"]) == \
        ("fetched", True, 50_000, "too_large")
    (headers, body), = [(h, b) for t, u, h, b in warc_records(tmp_path / "responses.warc.gz")
                        if t == "response" and u == row["url"]]
    assert headers["WARC-Truncated"] == "length" and body == b"\0" * 50_000
    assert min(gaps(requests, "bomb.test")) >= 0.1


def test_redirects_loops_and_limits(server: FaultServer, tmp_path: Path) -> None:
    server.route("loop.test", "/self", redirect("/self"))
    server.route("loop.test", "/hop1", redirect("/hop2", 301))
    server.route("loop.test", "/hop2", redirect("http://loop.test/hop3", 307))
    server.route("loop.test", "/hop3", page("done"))
    server.route("loop.test", "/endless/*", redirect("more/"))  # /endless/more/more/...
    server.route("loop.test", "/away", redirect("http://other.test/landing", 301))
    server.route("loop.test", "/temp", redirect("http://other.test/t", 303))
    server.route("loop.test", "/ftp", redirect("ftp://files.test/x"))
    server.route("loop.test", "/nowhere", respond(302, content_type=None))
    s = settings_for(server, max_redirects=3, min_delay=0.1, max_segment_repeats=50)
    urls = [f"http://loop.test{p}" for p in ("/self", "/hop1", "/endless/", "/away", "/temp", "/ftp", "/nowhere")]
    log, requests, _ = run(urls, s, tmp_path)
    got = {u.removeprefix("http://loop.test"): (r["outcome"], r["error_class"], r["status"])
           for u, r in log.items()}
    assert got == {"/self": ("gone", "redirect_loop", 302), "/hop1": ("redirected_permanent", None, 200),
                   "/endless/": ("gone", "too_many_redirects", 302),
                   "/away": ("redirected_permanent", None, 301), "/temp": ("redirected_temporary", None, 303),
                   "/ftp": ("gone", "bad_scheme", 302), "/nowhere": ("gone", "bad_redirect", 302)}
    hop = log["http://loop.test/hop1"]
    assert hop["redirects"] == ["http://loop.test/hop2", "http://loop.test/hop3"]
    assert hop["final_url"] == "http://loop.test/hop3"
    assert log["http://loop.test/away"]["final_url"] == "http://other.test/landing"
    assert len(log["http://loop.test/endless/"]["redirects"]) == 4  # the fourth hop is not followed
    assert server.hits_of("other.test") == []  # cross-host targets are left to the frontier
    # every hop waited its turn: robots, 1 + 3 + 4 (endless) + 1 + 1 + 1 + 1, all at least min_delay apart
    assert len(requests) == 13 and min(gaps(requests, "loop.test")) >= 0.1


def test_huge_robots_txt_is_parsed_up_to_the_limit(server: FaultServer, tmp_path: Path) -> None:
    robots = b"User-agent: *\nDisallow: /early\n" + b"# filler line\n" * 80_000 + b"Disallow: /late\n"
    server.route("bigrobots.test", "/robots.txt", respond(200, robots, content_type="text/plain"))
    server.route("bigrobots.test", "/late", page("late"))
    s = settings_for(server, robots_max_bytes=10_000, total_deadline=5.0)
    log, requests, hosts = run(["http://bigrobots.test/early", "http://bigrobots.test/late"], s, tmp_path)
    assert log["http://bigrobots.test/early"]["outcome"] == "disallowed"
    assert log["http://bigrobots.test/late"]["outcome"] == "fetched"  # its rule lies past the limit
    txt = hosts["bigrobots.test"]["robots_txt"]
    assert len(txt.encode()) <= 10_000 and txt.endswith("# filler line")
    assert min(gaps(requests, "bigrobots.test")) >= 0.1


def test_robots_errors_allow_or_block_the_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("r500.test", "/robots.txt", respond(500, b"oops"))
    server.route("rhang.test", "/robots.txt", hang())
    server.route("r404.test", "/p", page("p"))
    server.route("rredir.test", "/robots.txt", redirect("/real-robots.txt", 301))
    server.route("rredir.test", "/real-robots.txt", respond(200, b"User-agent: *\nDisallow: /no\n"))
    urls = ["http://r500.test/p", "http://rhang.test/p", "http://r404.test/p", "http://rredir.test/no",
            "http://rredir.test/yes"]
    s = settings_for(server)
    log, requests, hosts = run(urls, s, tmp_path)
    assert min(gaps(requests, "r404.test") + gaps(requests, "rredir.test")) >= 0.1
    assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
        "http://r500.test/p": ("retry_pending", "robots_unavailable"),
        "http://rhang.test/p": ("retry_pending", "robots_unavailable"),
        "http://r404.test/p": ("fetched", None),
        "http://rredir.test/no": ("disallowed", "robots_disallowed"),
        "http://rredir.test/yes": ("gone", "http_error")}
    assert server.hits_of("r500.test") == ["/robots.txt"] and server.hits_of("rhang.test") == ["/robots.txt"]
    assert {h: r["robots_status"] for h, r in hosts.items()} == \
        {"r500.test": 500, "rhang.test": None, "r404.test": 404, "rredir.test": 200}
    # An unavailable robots.txt is asked again next time; a 404 is kept for robots_ttl.
    run(urls, s, tmp_path / "again", hosts=list(hosts.values()))
    assert server.hits_of("r500.test") == ["/robots.txt"] * 2
    assert server.hits_of("r404.test") == ["/robots.txt", "/p", "/p"]


def test_retry_after_waits_or_backs_off(server: FaultServer, tmp_path: Path) -> None:
    server.route("wait.test", "/a", respond(429, b"slow down", {"Retry-After": "1"}))
    server.route("wait.test", "/b", page("b"))
    server.route("far.test", "/a", respond(503, b"later", {"Retry-After": "120"}))
    urls = ["http://wait.test/a", "http://wait.test/b", "http://far.test/a", "http://far.test/b",
            "http://far.test/c"]
    s = settings_for(server, max_delay=2.0)
    log, requests, hosts = run(urls, s, tmp_path)
    assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
        "http://wait.test/a": ("retry_pending", "http_error"), "http://wait.test/b": ("fetched", None),
        "http://far.test/a": ("retry_pending", "http_error"), "http://far.test/b": ("deferred", "retry_after"),
        "http://far.test/c": ("deferred", "retry_after")}
    assert gaps(requests, "wait.test")[-1] >= 1.0
    assert hosts["far.test"]["backoff_until"] == pytest.approx(time.time() + 120, abs=5)
    assert hosts["wait.test"]["backoff_until"] is None
    # While backing off, the host is not contacted at all.
    log2, requests2, _ = run(["http://far.test/a"], s, tmp_path / "again", hosts=list(hosts.values()))
    assert log2["http://far.test/a"]["outcome"] == "deferred" and requests2 == []


def test_connection_reset_mid_body(server: FaultServer, tmp_path: Path) -> None:
    server.route("reset.test", "/", reset_mid_body())
    log, requests, hosts = run(["http://reset.test/"], settings_for(server), tmp_path)
    row = log["http://reset.test/"]
    assert (row["error_class"], row["outcome"], row["final_url"]) == ("connection", "retry_pending", None)
    assert hosts["reset.test"]["errors"] == 1 and min(gaps(requests, "reset.test")) >= 0.1


def test_content_type_is_recorded_as_declared(server: FaultServer, tmp_path: Path) -> None:
    server.route("types.test", "/png", page("html served as png", content_type="image/png"))
    server.route("types.test", "/junk", page("junk type", content_type="not a type"))
    server.route("types.test", "/none", page("no type", content_type=None))
    server.route("types.test", "/up", page("upper", content_type="APPLICATION/XHTML+XML ;charset=x"))
    urls = [f"http://types.test/{p}" for p in ("png", "junk", "none", "up")]
    log, requests, _ = run(urls, settings_for(server, min_delay=0.05), tmp_path)
    assert {u.rsplit("/", 1)[1]: (r["outcome"], r["content_type"]) for u, r in log.items()} == {
        "png": ("fetched", "image/png"), "junk": ("fetched", None), "none": ("fetched", None),
        "up": ("fetched", "application/xhtml+xml")}
    assert len(requests) == 5 and min(gaps(requests, "types.test")) >= 0.05


def test_slow_host_gets_a_longer_delay(server: FaultServer, tmp_path: Path) -> None:
    server.route("slowhost.test", "/*", page("slow", delay=0.15))
    s = settings_for(server, min_delay=0.05, delay_factor=2.0, total_deadline=2.0, read_timeout=1.0)
    urls = [f"http://slowhost.test/{i}" for i in range(3)]
    log, requests, hosts = run(urls, s, tmp_path)
    assert all(r["outcome"] == "fetched" for r in log.values())
    reqs = sorted(requests, key=lambda r: r["started_at"])
    for prev, gap in zip(reqs, gaps(requests, "slowhost.test"), strict=False):
        assert gap >= 2.0 * (prev["finished_at"] - prev["started_at"]) >= 0.3
    assert hosts["slowhost.test"]["delay"] >= 0.3 and hosts["slowhost.test"]["last_response_ms"] >= 150


def test_ssrf_guard_blocks_private_targets(server: FaultServer, tmp_path: Path) -> None:
    server.route("pub.test", "/jump", redirect(f"http://127.0.0.2:{server.port}/secret"))
    s = settings_for(server, allow_networks="127.0.0.1/32")
    urls = ["http://pub.test/jump", f"http://127.0.0.3:{server.port}/direct"]
    log, requests, _ = run(urls, s, tmp_path)
    jump = log["http://pub.test/jump"]
    assert (jump["outcome"], jump["error_class"], jump["final_url"]) == \
        ("gone", "ssrf_blocked", f"http://127.0.0.2:{server.port}/secret")
    direct = log[urls[1]]
    assert (direct["outcome"], direct["error_class"], direct["started_at"]) == ("gone", "ssrf_blocked", None)
    assert {h for _, h, _ in server.hits} == {"pub.test"} and {r["host"] for r in requests} == {"pub.test"}
    assert min(gaps(requests, "pub.test")) >= 0.1
    # No allow-list: loopback is refused before any connection.
    server.hits.clear()
    log, requests, _ = run(["http://pub.test/jump"], settings_for(server, allow_networks=""), tmp_path / "b")
    assert log["http://pub.test/jump"]["error_class"] == "ssrf_blocked" and requests == [] and server.hits == []


def test_consecutive_errors_defer_the_rest_of_the_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("broken.test", "/*", respond(500, b"down"))
    server.route("broken.test", "/robots.txt", respond(404))
    urls = [f"http://broken.test/{i}" for i in range(6)]
    log, requests, hosts = run(urls, settings_for(server, host_error_limit=3), tmp_path)
    assert [(r["outcome"], r["error_class"]) for r in log.values()] == \
        [("retry_pending", "http_error")] * 3 + [("deferred", "host_errors")] * 3
    assert len(requests) == 4 and hosts["broken.test"]["errors"] == 3
    assert min(gaps(requests, "broken.test")) >= 0.1


def test_crawl_delay_beyond_the_cap_defers_the_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("lazy.test", "/robots.txt", respond(200, b"User-agent: *\nCrawl-delay: 60\n"))
    log, requests, hosts = run(["http://lazy.test/a", "http://lazy.test/b"], settings_for(server), tmp_path)
    assert {(r["outcome"], r["error_class"]) for r in log.values()} == {("deferred", "crawl_delay")}
    assert len(requests) == 1 and hosts["lazy.test"]["crawl_delay"] == 60


def test_a_crawl_delay_not_obeyed_neither_waits_nor_defers(server: FaultServer, tmp_path: Path) -> None:
    server.route("lazy.test", "/robots.txt", respond(200, b"User-agent: *\nCrawl-delay: 60\n"))
    server.route("lazy.test", "/*", respond(200, b"<p>page</p>"))
    urls = [f"http://lazy.test/{i}" for i in range(3)]
    log, requests, hosts = run(urls, settings_for(server, obey_crawl_delay=False, min_delay=0.0), tmp_path)
    assert {r["outcome"] for r in log.values()} == {"fetched"} and len(requests) == 4
    assert max(gaps(requests, "lazy.test")) < 5 and hosts["lazy.test"]["crawl_delay"] == 60


def test_time_limit_defers_urls_not_reached(server: FaultServer, tmp_path: Path) -> None:
    server.route("many.test", "/*", page("p"))
    urls = [f"http://many.test/{i}" for i in range(20)]
    started = time.time()
    log, requests, _ = run(urls, settings_for(server, min_delay=0.2, fetch_time_limit=0.7), tmp_path)
    assert time.time() - started < 2.0
    outcomes = [r["outcome"] for r in log.values()]  # robots.txt at 0 s, pages at 0.2, 0.4, 0.6 s at best
    assert outcomes[:2] == ["fetched", "fetched"] and set(outcomes[4:]) == {"deferred"}
    assert {r["error_class"] for r in log.values() if r["outcome"] == "deferred"} == {"deferred"}
    assert min(gaps(requests, "many.test")) >= 0.2


def test_hosts_are_fetched_concurrently(server: FaultServer, tmp_path: Path) -> None:
    server.route("*", "/*", page("p"))
    hosts = [f"h{i}.test" for i in range(8)]
    urls = [f"http://{h}/{j}" for h in hosts for j in range(4)]
    started = time.time()
    log, requests, _ = run(urls, settings_for(server, min_delay=0.2), tmp_path)
    elapsed = time.time() - started
    assert all(r["outcome"] == "fetched" for r in log.values())
    assert all(min(gaps(requests, h)) >= 0.2 for h in hosts)
    assert elapsed < 2.0  # one host needs 4 x 0.2 s; eight in a row would need 6.4 s


def test_bad_input_urls_and_missing_pages(server: FaultServer, tmp_path: Path) -> None:
    server.route("gone.test", "/old", respond(410))
    urls = ["ftp://gone.test/file", "http://gone.test/missing", "http://gone.test/old", "http:///nohost"]
    log, requests, _ = run(urls, settings_for(server), tmp_path)
    assert {u: (r["outcome"], r["error_class"], r["status"]) for u, r in log.items()} == {
        "ftp://gone.test/file": ("gone", "bad_scheme", None), "http:///nohost": ("gone", "bad_scheme", None),
        "http://gone.test/missing": ("gone", "http_error", 404), "http://gone.test/old": ("gone", "http_error", 410)}
    assert len(requests) == 3 and min(gaps(requests, "gone.test")) >= 0.1
