"""robots.txt rules: Google's robots.txt parser cases (RFC 9309) and the status rules of the fetcher; the robots gate
of one host's run on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from crawlcycle.fetch.backoff import Stop
from crawlcycle.fetch.robots import RobotsRules, StoredRobots, origin_of, robots_url
from tests.support.faultserver import FaultServer, Handler, hang, redirect, respond
from tests.support.fetching import host_loop, settings_for

# Intended differences from Google's parser, each for a stated reason:
# - a user agent with a blank ("Foo Bar") is not a product token; ours is one word (robots_token);
# - Google leaves a raw non-ASCII URL unencoded, and does not decode %62%61%7A to "baz" in a rule; our
#   URLs arrive canonical (percent-encoded) and Protego compares normalized escapes (RFC 3986 equivalence).
DIFFERENCES = {
    ("GoogleOnly_AcceptUserAgentUpToFirstSpace", "Foo Bar", "http://foo.bar/x/y"),
    ("ID_Encoding", "FooBot", "http://foo.bar/foo/bar/ツ"),
    ("ID_Encoding", "FooBot", "http://foo.bar/foo/bar/baz"),
}


def test_google_robotstxt_cases(shared: Path) -> None:
    cases = json.loads((shared / "conformance" / "google_robotstxt_cases.json").read_text())["cases"]
    assert len(cases) == 142
    differing = {(c["test"], c["user_agent"], c["url"]) for c in cases
                 if RobotsRules(200, c["robotstxt"], c["user_agent"]).allowed(c["url"]) != c["allowed"]}
    assert differing == DIFFERENCES


def test_percent_encoded_canonical_url_matches_either_rule_form() -> None:
    for rule in ("/foo/bar/ツ", "/foo/bar/%E3%83%84"):
        rules = RobotsRules(200, f"User-agent: FooBot\nDisallow: {rule}\n", "FooBot")
        assert not rules.allowed("http://foo.bar/foo/bar/%E3%83%84")


ROBOTS = """# comment
User-agent: *
Disallow: /

User-agent: otherbot
User-agent: CrawlCycle   # our group, matched case-insensitively
Unknown-record: ignored without ending the group
Allow: /docs/public
Disallow: /docs
Crawl-delay: 2.5

User-agent: crawlcycle-beta
Disallow: /beta

Sitemap: http://site.test/sitemap.xml
Sitemap: http://site.test/news.xml
"""


def test_group_of_the_token_with_crawl_delay_and_sitemaps() -> None:
    rules = RobotsRules(200, ROBOTS, "crawlcycle")
    assert rules.allowed("http://site.test/") and rules.allowed("http://site.test/beta/x")
    assert not rules.allowed("http://site.test/docs/private")
    assert rules.allowed("http://site.test/docs/public/a")
    assert rules.crawl_delay == 2.5
    assert rules.sitemaps == ["http://site.test/sitemap.xml", "http://site.test/news.xml"]
    other = RobotsRules(200, ROBOTS, "somebot")
    assert not other.allowed("http://site.test/") and other.crawl_delay is None


@pytest.mark.parametrize(("status", "allowed"), [(200, False), (404, True), (403, True), (401, True),
                                                 (301, True), (500, False), (503, False), (None, False)])
def test_status_decides_when_there_are_no_rules(status: int | None, allowed: bool) -> None:
    rules = RobotsRules(status, "User-agent: *\nDisallow: /\n" if status == 200 else None, "crawlcycle")
    assert rules.allowed("http://site.test/page") is allowed
    assert rules.disallow_all is (status is None or status >= 500)


def test_stored_unavailable_answer_does_not_exclude_urls_ahead_of_fetching() -> None:
    assert RobotsRules.from_stored(500, None, "crawlcycle").allowed("http://site.test/a")
    assert RobotsRules.from_stored(None, None, "crawlcycle").allowed("http://site.test/a")
    assert not RobotsRules.from_stored(200, ROBOTS, "crawlcycle").allowed("http://site.test/docs/x")


def test_robots_url_keeps_scheme_and_authority() -> None:
    assert robots_url("https://site.test:8443/a/b?c=d") == "https://site.test:8443/robots.txt"
    assert robots_url("http://user@site.test/a") == "http://site.test/robots.txt"


def test_stored_rules_are_looked_up_by_origin() -> None:
    """http and https of one host, and another port, each keep their own robots.txt; an origin never seen is
    allowed until the fetcher asks it."""
    rows = [{"origin": "http://site.test", "status": 200, "robots_txt": "User-agent: *\nDisallow: /a\n"},
            {"origin": "https://site.test", "status": 200, "robots_txt": "User-agent: *\nDisallow: /b\n"},
            {"origin": "http://site.test:8080", "status": 503, "robots_txt": None},
            {"origin": "http://other.test", "status": 200, "robots_txt": "User-agent: *\nDisallow: /\n"}]
    stored = StoredRobots(rows, "crawlcycle")
    assert [stored.allowed(u) for u in ("http://site.test/a", "http://site.test/b", "https://site.test/a",
                                        "https://site.test/b", "http://site.test:8080/a", "http://new.test/a")] == \
        [False, True, True, False, True, True]
    # a file is parsed when its origin's first URL is checked: other.test's never was
    assert sorted(stored.rules) == ["http://site.test", "http://site.test:8080", "https://site.test"]
    assert not stored.allowed("http://other.test/x") and "http://other.test" in stored.rules
    assert origin_of("https://user@site.test:8443/x?y") == "https://site.test:8443"


@pytest.mark.parametrize(("answer", "status", "allowed", "closed"), [
    (respond(200, b"User-agent: *\nDisallow: /private\n"), 200, [True, False], None),
    (redirect("/real-robots.txt", 301), 200, [True, False], None),  # followed: /real-robots.txt disallows /private
    (respond(404), 404, [True, True], None),
    (respond(403), 403, [True, True], None),
    (respond(503), 503, [False, False], Stop.ROBOTS_UNAVAILABLE),
    (hang(), None, [False, False], Stop.ROBOTS_UNAVAILABLE),
])
def test_the_gate_reads_each_origins_robots_txt_once_by_its_answer(
        server: FaultServer, tmp_path: Path, answer: Handler, status: int | None, allowed: list[bool],
        closed: Stop | None) -> None:
    server.route("g.test", "/robots.txt", answer)
    server.route("g.test", "/real-robots.txt", respond(200, b"User-agent: *\nDisallow: /private\n"))
    with host_loop(settings_for(server, read_timeout=0.3), "g.test", tmp_path) as loop:
        state = loop.robots.origin("http://g.test")
        assert [loop.robots.allows(f"http://g.test/{p}") for p in ("page", "private/x")] == allowed
        assert loop.robots.origin("http://g.test") is state and loop.robots.rows() == [state.row]
    assert (state.row["status"], state.closed, state.fetched) == (status, closed, True)
    assert server.hits_of("g.test")[:1] == ["/robots.txt"] and server.hits_of("g.test").count("/robots.txt") == 1


def test_a_stored_robots_txt_is_used_within_its_ttl_and_a_probe_asks_again(server: FaultServer,
                                                                          tmp_path: Path) -> None:
    server.route("g.test", "/robots.txt", respond(200, b"User-agent: *\nDisallow: /new\n"))
    stored = {"origin": "http://g.test", "status": 200, "robots_txt": "User-agent: *\nDisallow: /old\n"}
    s = settings_for(server, robots_ttl=60)
    for fetched_at, probe, asked in [(time.time(), False, False), (time.time() - 120, False, True),
                                     (time.time(), True, True)]:
        server.hits.clear()
        with host_loop(s, "g.test", tmp_path, stored_robots={"http://g.test": stored | {"fetched_at": fetched_at}}) \
                as loop:
            state = loop.robots.origin("http://g.test", probe=probe)
            assert loop.robots.allows("http://g.test/old") is asked and state.fetched is asked
        assert server.hits_of("g.test") == (["/robots.txt"] if asked else [])
    # a stored answer of 5xx is never reused
    with host_loop(s, "g.test", tmp_path, stored_robots={"http://g.test": stored | {
            "status": 503, "robots_txt": None, "fetched_at": time.time()}}) as loop:
        assert not loop.robots.allows("http://g.test/new") and loop.robots.origin("http://g.test").fetched


@pytest.mark.parametrize(("delay", "obey", "pace", "closed"), [
    (0.2, True, 0.2, None), (60, True, None, Stop.CRAWL_DELAY), (60, False, None, None)])
def test_crawl_delay_sets_the_hosts_pace_or_closes_the_origin(server: FaultServer, tmp_path: Path, delay: float,
                                                              obey: bool, pace: float | None,
                                                              closed: Stop | None) -> None:
    server.route("g.test", "/robots.txt", respond(200, f"User-agent: *\nCrawl-delay: {delay}\n".encode()))
    with host_loop(settings_for(server, max_delay=1.0, obey_crawl_delay=obey), "g.test", tmp_path) as loop:
        state = loop.robots.origin("http://g.test")
    assert (loop.pace.crawl_delay, state.closed, state.row["crawl_delay"]) == (pace, closed, delay)


def test_a_robots_txt_the_ssrf_guard_refuses_stops_the_host(server: FaultServer, tmp_path: Path) -> None:
    with host_loop(settings_for(server, allow_networks=""), "g.test", tmp_path) as loop:
        state = loop.robots.origin("http://g.test")
        assert loop.backoff.stopped == Stop.SSRF_BLOCKED and state.rules is None and loop.robots.rows() == []
    assert server.hits == []


def test_the_gate_lists_the_sitemaps_of_origins_it_fetched_and_left_open(server: FaultServer, tmp_path: Path) -> None:
    server.route("g.test", "/robots.txt", respond(200, b"Sitemap: http://g.test/a.xml\nSitemap: /b.xml\n"))
    server.route("bare.test", "/robots.txt", respond(404))
    server.route("down.test", "/robots.txt", respond(500))
    stored = {"http://kept.test": {"origin": "http://kept.test", "status": 200, "fetched_at": time.time(),
                                   "robots_txt": "Sitemap: http://kept.test/s.xml\n"}}
    listed = {}
    for host, fallback in [("g.test", True), ("bare.test", True), ("bare.test", False), ("down.test", True),
                           ("kept.test", True)]:
        with host_loop(settings_for(server, sitemap_fallback=fallback), host, tmp_path, stored_robots=stored) as loop:
            loop.robots.origin(f"http://{host}")
            listed[host, fallback] = loop.robots.sitemaps()
    assert listed == {
        ("g.test", True): [("http://g.test/a.xml", "http://g.test/robots.txt"), ("/b.xml", "http://g.test/robots.txt")],
        ("bare.test", True): [("/sitemap.xml", "http://bare.test/robots.txt")], ("bare.test", False): [],
        ("down.test", True): [], ("kept.test", True): []}  # a stored robots.txt's sitemaps were read when fetched
