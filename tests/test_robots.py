"""robots.txt rules: Google's robots.txt parser cases (RFC 9309) and the status rules of the fetcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawlcycle.fetch.robots import RobotsRules, StoredRobots, origin_of, robots_url

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
            {"origin": "http://site.test:8080", "status": 503, "robots_txt": None}]
    stored = StoredRobots(rows, "crawlcycle")
    assert [stored.allowed(u) for u in ("http://site.test/a", "http://site.test/b", "https://site.test/a",
                                        "https://site.test/b", "http://site.test:8080/a", "http://new.test/a")] == \
        [False, True, True, False, True, True]
    assert origin_of("https://user@site.test:8443/x?y") == "https://site.test:8443"
