"""The fetcher against real misbehaving servers on loopback; outcomes and politeness read back from its files."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.contracts import shard_files
from crawlcycle.fetch.politeness import read_journal
from crawlcycle.settings.sources import write_toml
from tests.support.demo import USER_AGENT
from tests.support.faultserver import (
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
from tests.support.fetching import gaps, host_loop, run, settings_for


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
    log, requests, stored = run(urls, s, tmp_path)

    assert {u: r["outcome"] for u, r in log.items()} == {
        "http://site.test/a": "fetched", "http://site.test/b": "fetched", "http://site.test/gz": "fetched",
        "http://site.test/private/x": "disallowed"}
    a = log["http://site.test/a"]
    assert (a["status"], a["content_type"], a["final_url"], a["error_class"]) == (200, "text/html", a["url"], None)
    assert a["started_at"] < a["finished_at"] and a["elapsed_ms"] > 0
    assert log["http://site.test/gz"]["bytes"] == len(b"<html>" + b"small " * 100 + b"</html>")
    assert log["http://site.test/private/x"]["started_at"] is None
    assert "/private/x" not in server.hits_of("site.test")
    # robots.txt first, then the pages, then the sitemap robots.txt names; each gap at least the Crawl-delay
    order = [r["url"] for r in sorted(requests, key=lambda r: r["started_at"])]
    assert order[0] == "http://site.test/robots.txt" and order[-1] == "http://site.test/sitemap.xml"
    assert len(requests) == 5 and min(gaps(requests, "site.test")) >= 0.2
    origin = stored["robots"]["http://site.test"]
    assert (origin["status"], origin["crawl_delay"], origin["sitemaps"], origin["robots_txt"]) == \
        (200, 0.2, ["http://site.test/sitemap.xml"], robots.decode())
    host = stored["hosts"]["site.test"]
    assert host["crawl_delay"] == 0.2 and host["delay"] >= 0.2 and host["errors"] == 0
    assert host["last_request_at"] == max(r["finished_at"] for r in requests)

    records = warc_records(tmp_path / "responses.warc.gz")
    kind, _, info_headers, info = records[0]  # a warcinfo record opens the file
    assert kind == "warcinfo" and info_headers["WARC-Filename"] == "responses.warc.gz"
    fields = dict(line.split(": ", 1) for line in info.decode().splitlines())
    assert fields["software"].startswith("crawlcycle/") and fields["http-header-user-agent"] == USER_AGENT
    assert fields["operator"] == "http://127.0.0.1/contact" and fields["robots"].startswith("obey")
    records = records[1:]
    assert [u for t, u, _, _ in records if t == "request"] == [u for t, u, _, _ in records if t == "response"]
    assert {u for t, u, _, _ in records} == {"http://site.test/robots.txt", "http://site.test/a",
                                            "http://site.test/b", "http://site.test/gz", "http://site.test/sitemap.xml"}
    assert all(h["WARC-IP-Address"] == "127.0.0.1" for _, _, h, _ in records)
    assert subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", str(tmp_path / "responses.warc.gz")],
                          capture_output=True).returncode == 0
    by_uri = {(t, u): (h, body) for t, u, h, body in records}
    req_headers, _ = by_uri[("request", "http://site.test/a")]
    assert req_headers["http"]["User-Agent"] == USER_AGENT and req_headers["http"]["Host"] == "site.test"
    assert by_uri[("response", "http://site.test/b")][1] == b"<html><body>chunked body</body></html>"
    gz_headers, gz_body = by_uri[("response", "http://site.test/gz")]
    assert gz_body.startswith(b"<html>small") and gz_headers["http"]["X-Crawler-Content-Encoding"] == "gzip"
    assert gz_headers["WARC-IP-Address"] == "127.0.0.1"

    # Second call: robots.txt comes from the stored rows, and so its sitemaps are not read again; the first
    # request waits the delay after the last one of the first call. The files are replaced, not appended to; the
    # request log keeps the first call's requests as attempt 1 (the journal in the folder remembers them).
    log2, requests2, _ = run(urls, s, tmp_path, stored)
    assert len(log2) == 4 and [r["url"] for r in requests2 if r["attempt"] == 2] == [
        "http://site.test/a", "http://site.test/b", "http://site.test/gz"]
    assert [r for r in requests2 if r["attempt"] == 1] == [{**r, "attempt": 1} for r in requests]
    assert min(gaps(requests2, "site.test")) >= 0.2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*shard_files.FETCH_OUTPUTS, shard_files.WARC, shard_files.POLITENESS_JOURNAL])


def test_trickling_body_is_cut_at_the_total_deadline(server: FaultServer, tmp_path: Path) -> None:
    server.route("trickle.test", "/slow", trickle(200, 0.05))
    server.route("trickle.test", "/next", page("next"))
    s = settings_for(server, total_deadline=0.6, read_timeout=0.3)
    log, requests, hosts = run(["http://trickle.test/slow", "http://trickle.test/next"], s, tmp_path)
    slow = log["http://trickle.test/slow"]
    assert (slow["error_class"], slow["outcome"], slow["status"]) == ("timeout", "retry_pending", None)
    # cut at the total deadline, long before the server would have sent the whole body (200 x 0.05 s)
    assert s.total_deadline * 1000 <= slow["elapsed_ms"] < 200 * 0.05 * 1000
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
    assert s.read_timeout * 1000 <= row["elapsed_ms"] < s.total_deadline * 1000  # the read timeout cut it
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
    log, requests, stored = run(["http://bigrobots.test/early", "http://bigrobots.test/late"], s, tmp_path)
    assert log["http://bigrobots.test/early"]["outcome"] == "disallowed"
    assert log["http://bigrobots.test/late"]["outcome"] == "fetched"  # its rule lies past the limit
    txt = stored["robots"]["http://bigrobots.test"]["robots_txt"]
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
    log, requests, stored = run(urls, s, tmp_path)
    assert min(gaps(requests, "r404.test") + gaps(requests, "rredir.test")) >= 0.1
    assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
        "http://r500.test/p": ("deferred", "robots_unavailable"),
        "http://rhang.test/p": ("deferred", "robots_unavailable"),
        "http://r404.test/p": ("fetched", None),
        "http://rredir.test/no": ("disallowed", "robots_disallowed"),
        "http://rredir.test/yes": ("gone", "http_error")}
    assert server.hits_of("r500.test") == ["/robots.txt"] and server.hits_of("rhang.test") == ["/robots.txt"]
    assert {o: r["status"] for o, r in stored["robots"].items()} == \
        {"http://r500.test": 500, "http://rhang.test": None, "http://r404.test": 404, "http://rredir.test": 200}
    # An unavailable robots.txt is asked again next time; a 404 is kept for robots_ttl. The origins whose robots.txt
    # did not answer did not answer at all (their URLs wait for the origin's back-off, keeping their attempts).
    assert {o: t["error_class"] for o, t in stored["tries"].items()} == {
        "http://r500.test": "robots_server_error", "http://rhang.test": "timeout", "http://r404.test": None,
        "http://rredir.test": None}
    run(urls, s, tmp_path / "again", stored)
    assert server.hits_of("r500.test") == ["/robots.txt"] * 2
    assert server.hits_of("r404.test") == ["/robots.txt", "/p", "/p"]


def test_retry_after_waits_or_backs_off(server: FaultServer, tmp_path: Path) -> None:
    server.route("wait.test", "/a", respond(429, b"slow down", {"Retry-After": "1"}))
    server.route("wait.test", "/b", page("b"))
    server.route("far.test", "/a", respond(503, b"later", {"Retry-After": "120"}))
    urls = ["http://wait.test/a", "http://wait.test/b", "http://far.test/a", "http://far.test/b",
            "http://far.test/c"]
    s = settings_for(server, max_delay=2.0)
    log, requests, stored = run(urls, s, tmp_path)
    hosts = stored["hosts"]
    assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
        "http://wait.test/a": ("retry_pending", "http_error"), "http://wait.test/b": ("fetched", None),
        "http://far.test/a": ("retry_pending", "http_error"), "http://far.test/b": ("deferred", "retry_after"),
        "http://far.test/c": ("deferred", "retry_after")}
    assert gaps(requests, "wait.test")[-1] >= 1.0
    (far,) = [r for r in requests if r["url"] == "http://far.test/a"]
    assert hosts["far.test"]["backoff_until"] >= far["finished_at"] + 120  # Retry-After counts from the answer
    assert hosts["wait.test"]["backoff_until"] is None
    # While backing off, the host is not contacted at all.
    log2, requests2, _ = run(["http://far.test/a"], s, tmp_path / "again", stored)
    assert log2["http://far.test/a"]["outcome"] == "deferred" and requests2 == []


def test_connection_reset_mid_body(server: FaultServer, tmp_path: Path) -> None:
    server.route("reset.test", "/", reset_mid_body())
    log, requests, stored = run(["http://reset.test/"], settings_for(server), tmp_path)
    row = log["http://reset.test/"]
    assert (row["error_class"], row["outcome"], row["final_url"]) == ("connection", "retry_pending", None)
    assert stored["hosts"]["reset.test"]["errors"] == 1 and min(gaps(requests, "reset.test")) >= 0.1


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
    log, requests, stored = run(urls, s, tmp_path)
    hosts = stored["hosts"]
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
    log, requests, stored = run(urls, settings_for(server, host_error_limit=3), tmp_path)
    assert [(r["outcome"], r["error_class"]) for r in log.values()] == \
        [("retry_pending", "http_error")] * 3 + [("deferred", "host_errors")] * 3
    assert len(requests) == 4 and stored["hosts"]["broken.test"]["errors"] == 3
    assert min(gaps(requests, "broken.test")) >= 0.1


def test_crawl_delay_beyond_the_cap_defers_the_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("lazy.test", "/robots.txt", respond(200, b"User-agent: *\nCrawl-delay: 60\n"))
    log, requests, stored = run(["http://lazy.test/a", "http://lazy.test/b"], settings_for(server), tmp_path)
    assert {(r["outcome"], r["error_class"]) for r in log.values()} == {("deferred", "crawl_delay")}
    # what the origin asks is kept; the host's pace is not set by an origin it does not crawl
    assert len(requests) == 1 and stored["robots"]["http://lazy.test"]["crawl_delay"] == 60
    assert stored["hosts"]["lazy.test"]["crawl_delay"] is None


def test_a_crawl_delay_not_obeyed_neither_waits_nor_defers(server: FaultServer, tmp_path: Path) -> None:
    server.route("lazy.test", "/robots.txt", respond(200, b"User-agent: *\nCrawl-delay: 60\n"))
    server.route("lazy.test", "/*", respond(200, b"<p>page</p>"))
    urls = [f"http://lazy.test/{i}" for i in range(3)]
    log, requests, stored = run(urls, settings_for(server, obey_crawl_delay=False, min_delay=0.0), tmp_path)
    assert {r["outcome"] for r in log.values()} == {"fetched"} and len(requests) == 4
    assert max(gaps(requests, "lazy.test")) < 60 and stored["robots"]["http://lazy.test"]["crawl_delay"] == 60
    assert stored["hosts"]["lazy.test"]["crawl_delay"] is None


def test_time_limit_defers_urls_not_reached(server: FaultServer, tmp_path: Path) -> None:
    server.route("many.test", "/*", page("p"))
    urls = [f"http://many.test/{i}" for i in range(20)]
    log, requests, _ = run(urls, settings_for(server, min_delay=0.2, fetch_time_limit=0.7), tmp_path)
    starts = sorted(r["started_at"] for r in requests)
    assert starts[-1] - starts[0] < 0.7  # no request began past the time limit
    outcomes = [r["outcome"] for r in log.values()]  # robots.txt at 0 s, pages at 0.2, 0.4, 0.6 s at best
    assert outcomes[:2] == ["fetched", "fetched"] and set(outcomes[4:]) == {"deferred"}
    assert {r["error_class"] for r in log.values() if r["outcome"] == "deferred"} == {"deferred"}
    assert min(gaps(requests, "many.test")) >= 0.2


def test_hosts_are_fetched_concurrently(server: FaultServer, tmp_path: Path) -> None:
    server.route("*", "/*", page("p"))
    hosts = [f"h{i}.test" for i in range(8)]
    urls = [f"http://{h}/{j}" for h in hosts for j in range(4)]
    log, requests, _ = run(urls, settings_for(server, min_delay=0.2), tmp_path)
    assert all(r["outcome"] == "fetched" for r in log.values())
    assert all(min(gaps(requests, h)) >= 0.2 for h in hosts)
    # All eight at once: every host's first request began before any host's last one ended (in a row, each
    # host would begin only after the one before had finished).
    first = {h: min(r["started_at"] for r in requests if r["host"] == h) for h in hosts}
    last = {h: max(r["finished_at"] for r in requests if r["host"] == h) for h in hosts}
    assert max(first.values()) < min(last.values())


def test_bad_input_urls_and_missing_pages(server: FaultServer, tmp_path: Path) -> None:
    server.route("gone.test", "/old", respond(410))
    urls = ["ftp://gone.test/file", "http://gone.test/missing", "http://gone.test/old", "http:///nohost"]
    log, requests, _ = run(urls, settings_for(server), tmp_path)
    assert {u: (r["outcome"], r["error_class"], r["status"]) for u, r in log.items()} == {
        "ftp://gone.test/file": ("gone", "bad_scheme", None), "http:///nohost": ("gone", "bad_scheme", None),
        "http://gone.test/missing": ("gone", "http_error", 404), "http://gone.test/old": ("gone", "http_error", 410)}
    assert len(requests) == 3 and min(gaps(requests, "gone.test")) >= 0.1


def test_requests_to_a_host_share_one_kept_alive_connection(server: FaultServer, tmp_path: Path) -> None:
    server.route("ka.test", "/robots.txt", respond(200, b"User-agent: *\nAllow: /\n", content_type="text/plain",
                                                   keep_alive=True))
    server.route("ka.test", "/*", page("kept", keep_alive=True))
    server.route("ka.test", "/missing", respond(404, b"no such page", keep_alive=True))
    urls = [f"http://ka.test/{i}" for i in range(4)] + ["http://ka.test/missing"]
    log, requests, _ = run(urls, settings_for(server, min_delay=0.05), tmp_path)
    assert [r["outcome"] for r in log.values()] == ["fetched"] * 4 + ["gone"]
    ordered = sorted(requests, key=lambda r: r["started_at"])
    assert [r["new_connection"] for r in ordered] == [True] + [False] * 5
    assert server.connections == 1 and min(gaps(requests, "ka.test")) >= 0.05


@pytest.mark.parametrize("how", ["closed after each answer", "Keep-Alive timeout shorter than the delay"])
def test_a_connection_the_server_dropped_is_opened_again(server: FaultServer, tmp_path: Path, how: str) -> None:
    if how == "closed after each answer":  # says keep-alive, then hangs up: the next request finds it closed
        def handler(conn, path):
            respond(200, b"<p>page</p>", keep_alive=True)(conn, path)
        delay = 0.1
    else:  # keeps it, but says it will not wait longer than 1 s: the crawler does not try it after 1.2 s
        handler = respond(200, b"<p>page</p>", {"Keep-Alive": "timeout=1"}, keep_alive=True)
        delay = 1.2
    server.route("drop.test", "/*", handler)
    urls = [f"http://drop.test/{i}" for i in range(3)]
    log, requests, _ = run(urls, settings_for(server, min_delay=delay, max_delay=2.0), tmp_path)
    assert [r["outcome"] for r in log.values()] == ["fetched"] * 3
    # one request and one connection per URL and robots.txt: no request was lost or sent twice
    assert len(requests) == len(server.hits) == server.connections == 4
    assert all(r["new_connection"] for r in requests) and min(gaps(requests, "drop.test")) >= delay


def test_robots_txt_applies_per_origin_and_politeness_per_host(tmp_path: Path) -> None:
    """Two origins of one host (127.0.0.1 on two ports): one answers robots.txt with 500, the other disallows
    /secret. Each origin's rules decide for its own URLs only; requests to the host, to either origin, keep the
    delay between them."""
    down, strict = FaultServer(), FaultServer()
    try:
        down.route("*", "/robots.txt", respond(500, b"down"))
        down.route("*", "/*", page("down"))
        strict.route("*", "/robots.txt", respond(200, b"User-agent: *\nDisallow: /secret\n", content_type="text/plain"))
        strict.route("*", "/*", page("strict"))
        a, b = f"http://127.0.0.1:{down.port}", f"http://127.0.0.1:{strict.port}"
        urls = [f"{b}/page", f"{a}/page", f"{b}/secret", f"{a}/secret", f"{b}/other"]
        log, requests, stored = run(urls, settings_for(down, connect_to="", min_delay=0.2), tmp_path)
        assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
            f"{b}/page": ("fetched", None), f"{a}/page": ("deferred", "robots_unavailable"),
            f"{b}/secret": ("disallowed", "robots_disallowed"), f"{a}/secret": ("deferred", "robots_unavailable"),
            f"{b}/other": ("fetched", None)}
        assert down.hits_of("127.0.0.1") == ["/robots.txt"]
        assert strict.hits_of("127.0.0.1") == ["/robots.txt", "/page", "/other"]
        assert {o: r["status"] for o, r in stored["robots"].items()} == {a: 500, b: 200}
        assert list(stored["hosts"]) == ["127.0.0.1"]
        # one host, one pace: as recorded, and as the two servers saw the requests arrive
        assert {r["host"] for r in requests} == {"127.0.0.1"} and min(gaps(requests, "127.0.0.1")) >= 0.2
        arrivals = sorted(t for t, _, _ in down.hits + strict.hits)
        assert min(later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)) >= 0.2
    finally:
        down.close()
        strict.close()


def test_dns_is_bounded_and_asked_once_per_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("*", "/*", page("p"))
    asked: list[str] = []
    slow_answered = threading.Event()

    def getaddrinfo(host: str, port: int, **kwargs: object) -> list:
        asked.append(host)
        if host == "slow.example":  # a resolver that never answers in time
            time.sleep(3)
            slow_answered.set()
        if host != "good.example":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    p = server.port
    urls = [f"http://good.example:{p}/{i}" for i in range(3)] + \
        [f"http://nx.example:{p}/a", f"https://nx.example:{p}/b", f"http://slow.example:{p}/a"]
    log, requests, _ = run(urls, settings_for(server, connect_timeout=0.3), tmp_path, getaddrinfo=getaddrinfo)
    assert {u: (r["outcome"], r["error_class"]) for u, r in log.items()} == {
        **{u: ("fetched", None) for u in urls[:3]},
        **{u: ("retry_pending", "dns") for u in urls[3:]}}
    # every host was looked up once: answers and failures are kept, across origins (http and https of nx)
    assert sorted(asked) == ["good.example", "nx.example", "slow.example"]
    # the fetch did not wait for the resolver that hangs: it gave up after connect_timeout
    assert not slow_answered.is_set()
    assert len(requests) == 4 and {r["host"] for r in requests} == {"good.example"}


_FETCH_SHARD = """
import sys, time
from pathlib import Path
from crawlcycle.pipeline import stages
from crawlcycle.settings.sources import load_settings
settings, go = load_settings(sys.argv[1]), Path(sys.argv[3])
while not go.exists():  # imported and ready: the retry starts the moment it is told to
    time.sleep(0.005)
stages.fetch(settings, sys.argv[2])
"""


@pytest.mark.parametrize("storage", ["local folder", "file:// shard storage"])
def test_a_killed_fetch_shard_retried_waits_out_the_delay(server: FaultServer, tmp_path: Path, storage: str) -> None:
    server.route("patient.test", "/*", page("p"))
    settings = settings_for(server, min_delay=1.0, max_delay=2.0)
    write_toml(settings, tmp_path / "s.toml")
    shard = tmp_path / "shard-000"
    shard.mkdir()
    urls = [f"http://patient.test/{i}" for i in range(3)]
    shard_files.write_table(shard / shard_files.URLS, pa.Table.from_pylist(
        [{"url": u, "host": "patient.test", "rank": i, "kind": "new"} for i, u in enumerate(urls, 1)],
        schema=shard_files.URLS_SCHEMA))
    for name in (shard_files.HOSTS_IN, shard_files.ROBOTS_IN):
        pl.DataFrame({"host": []}, schema={"host": pl.String}).write_parquet(shard / name)
    pl.DataFrame(schema={"origin": pl.String, "host": pl.String}).write_parquet(shard / shard_files.PROBES)

    # in shard storage, an attempt works on a copy and stores back only what a finished fetch wrote, and the
    # journal as it grows
    location = str(shard) if storage == "local folder" else f"file://{shard}"

    def attempt(go: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", _FETCH_SHARD, str(tmp_path / "s.toml"), location, str(go)])

    (tmp_path / "go-1").touch()
    first, retry = attempt(tmp_path / "go-1"), attempt(tmp_path / "go-2")
    try:
        # robots.txt and the first page have reached the server, and the journal (in shard storage: its stored
        # copy, which trails the request) holds the host: kill it half-way
        for _ in range(3000):
            journal = read_journal(shard / shard_files.POLITENESS_JOURNAL)
            if len(server.hits) >= 2 and "patient.test" in journal.not_before:
                break
            time.sleep(0.01)
        first.kill()
        first.wait()
        killed = list(server.hits)
        journaled = read_journal(shard / shard_files.POLITENESS_JOURNAL).not_before["patient.test"]
        (tmp_path / "go-2").touch()
        assert retry.wait(timeout=60) == 0
    finally:
        for p in (first, retry):
            p.kill()
    assert 2 <= len(killed) < 4  # robots.txt and 1 or 2 of the 3 pages
    again = server.hits[len(killed):]
    # As the server saw it: the retry's first request came at least the delay after the killed one's last.
    assert again and again[0][0] - killed[-1][0] >= 1.0
    # As the retry recorded it: its first request started no sooner than the killed attempt's journal allowed.
    assert [r["outcome"] for r in pq.read_table(shard / shard_files.FETCH_LOG).to_pylist()] == ["fetched"] * 3
    requests = pq.read_table(shard / shard_files.REQUESTS).to_pylist()
    assert min(r["started_at"] for r in requests if r["attempt"] == 2) >= journaled
    # The killed attempt's requests reached the server: the request log keeps them, one cut by the kill too (all of
    # them in a local folder; in shard storage, those of the journal's last stored copy).
    kept = [r["url"].split("/", 3)[3] for r in requests if r["attempt"] == 1]
    assert kept == [path.lstrip("/") for _, _, path in killed][:len(kept)]
    assert len(kept) == len(killed) if storage == "local folder" else kept


def test_a_host_loop_probes_then_fetches_its_urls_then_reads_its_sitemaps(server: FaultServer, tmp_path: Path) -> None:
    """One host's run on its own: the robots.txt of the origin to probe first, then the batch URLs in order (their
    origin's robots.txt before the first), then the sitemaps; once the host stops, the URLs left and the sitemaps
    carry the reason."""
    server.route("h.test", "/robots.txt", respond(200, b"Sitemap: http://h.test/s.xml\n"))
    server.route("h.test", "/a", page("a"))
    server.route("h.test", "/b*", respond(500, b"down"))
    server.route("h.test", "/s.xml", respond(200, b"http://h.test/listed\n"))
    urls = ["http://h.test/a", "http://h.test/b", "http://h.test/b?again", "http://h.test/c"]
    s = settings_for(server, min_delay=0.05, host_error_limit=2)
    with host_loop(s, "h.test", tmp_path) as loop:
        rows, out = loop.run(urls[:1], ["http://h.test:8080"])
        assert server.hits_of("h.test") == ["/robots.txt", "/robots.txt", "/a", "/s.xml"]
        assert [r["error_class"] for r in rows] == [None]
        assert {(t["origin"], t["probe"], t["error_class"]) for t in out[shard_files.ORIGIN_TRIES]} == {
            ("http://h.test:8080", True, None), ("http://h.test", False, None)}
        assert [u["url"] for u in out[shard_files.SITEMAP_URLS]] == ["http://h.test/listed"]
    with host_loop(s, "h.test", tmp_path / "stops") as loop:
        rows, out = loop.run(urls, [])
    assert [(r["outcome"], r["error_class"]) for r in rows] == [
        ("fetched", None), ("retry_pending", "http_error"), ("retry_pending", "http_error"),
        ("deferred", "host_errors")]
    assert [(f["url"], f["reason"]) for f in out[shard_files.SITEMAPS]] == [("http://h.test/s.xml", "host_errors")]
    assert out[shard_files.HOSTS][0]["errors"] == 2
    # the run ended on failures in a row: its origin did not answer
    tries = out[shard_files.ORIGIN_TRIES]
    assert [(t["origin"], t["error_class"]) for t in tries] == [("http://h.test", "server_error")]
