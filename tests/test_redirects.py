"""The redirect follower on its own: hops recorded, loops, the limit, bad targets, the time limit and the caller's rule
of where a chain may go, against a FaultServer on loopback."""

from __future__ import annotations

from pathlib import Path

from crawlcycle.fetch.redirects import follow, within
from tests.support.faultserver import FaultServer, page, redirect, respond
from tests.support.fetching import gaps, host_loop, settings_for


def anywhere(target: str) -> bool:
    return True


def test_a_chain_records_each_hop_and_ends_at_the_answer(server: FaultServer, tmp_path: Path) -> None:
    server.route("r.test", "/a", redirect("/b", 301))
    server.route("r.test", "/b", redirect("http://r.test/c", 307))
    server.route("r.test", "/c", page("c"))
    with host_loop(settings_for(server), "r.test", tmp_path) as loop:
        chain = follow(loop.requests, "http://r.test/a", 50_000, 5, anywhere)
        requests = loop.requests.recorder.requests
    assert (chain.end, chain.targets, chain.final_url) == (None, ["http://r.test/b", "http://r.test/c"],
                                                           "http://r.test/c")
    assert [ex.status for ex in chain.exchanges] == [301, 307, 200] and chain.last is chain.exchanges[-1]
    assert server.hits_of("r.test") == ["/a", "/b", "/c"] and min(gaps(requests, "r.test")) >= 0.1  # each at its turn


def test_a_loop_ends_at_the_first_target_met_again_unless_revisits_go_on_to_the_limit(
        server: FaultServer, tmp_path: Path) -> None:
    server.route("r.test", "/x", redirect("/y"))
    server.route("r.test", "/y", redirect("/x"))
    with host_loop(settings_for(server, min_delay=0.0), "r.test", tmp_path) as loop:
        chain = follow(loop.requests, "http://r.test/x", 50_000, 5, anywhere)
        assert (chain.end, chain.targets, chain.final_url) == ("redirect_loop", ["http://r.test/y", "http://r.test/x"],
                                                               "http://r.test/x")
        assert server.hits_of("r.test") == ["/x", "/y"]
        server.hits.clear()
        again = follow(loop.requests, "http://r.test/x", 50_000, 5, anywhere, revisits=True)
    assert again.end == "too_many_redirects" and len(again.targets) == 6 and again.last.status == 302
    assert server.hits_of("r.test") == ["/x", "/y"] * 3  # the first request and five hops


def test_the_limit_counts_hops_and_bad_targets_end_a_chain(server: FaultServer, tmp_path: Path) -> None:
    server.route("r.test", "/endless/*", redirect("more/"))  # /endless/more/more/...
    server.route("r.test", "/nowhere", respond(302, content_type=None))
    server.route("r.test", "/ftp", redirect("ftp://files.test/x"))
    with host_loop(settings_for(server, min_delay=0.0, max_segment_repeats=50), "r.test", tmp_path) as loop:
        endless = follow(loop.requests, "http://r.test/endless/", 50_000, 2, anywhere)
        nowhere = follow(loop.requests, "http://r.test/nowhere", 50_000, 2, anywhere)
        ftp = follow(loop.requests, "http://r.test/ftp", 50_000, 2, anywhere)
    # two hops followed; the third is recorded, not followed
    assert (endless.end, len(endless.exchanges), len(endless.targets)) == ("too_many_redirects", 3, 3)
    assert endless.final_url == endless.targets[-1] == "http://r.test/endless/more/more/more/"
    assert (nowhere.end, nowhere.targets, nowhere.final_url) == ("bad_redirect", [], None)
    assert (ftp.end, ftp.targets, ftp.final_url) == ("bad_scheme", ["ftp://files.test/x"], None)


def test_the_callers_rule_decides_which_targets_are_followed(server: FaultServer, tmp_path: Path) -> None:
    server.route("r.test", "/robots.txt", respond(200, b"User-agent: *\nDisallow: /private\n"))
    server.route("r.test", "/away", redirect("http://other.test/landing", 301))
    server.route("r.test", "/in", redirect("/private/x"))
    server.route("other.test", "/landing", page("landing"))
    with host_loop(settings_for(server, min_delay=0.0), "r.test", tmp_path) as loop:
        rule = within("r.test", loop.robots.allows)  # a page's: its own host's URLs that robots.txt allows
        away = follow(loop.requests, "http://r.test/away", 50_000, 5, rule)
        private = follow(loop.requests, "http://r.test/in", 50_000, 5, rule)
        assert server.hits_of("other.test") == [] and "/private/x" not in server.hits_of("r.test")
        robots = follow(loop.requests, "http://r.test/away", 50_000, 5, anywhere)  # a robots.txt's: any host
    assert (away.end, away.unfollowed, away.final_url, away.last.status) == (None, True, "http://other.test/landing",
                                                                               301)
    assert (private.end, private.unfollowed, private.final_url) == (None, True, "http://r.test/private/x")
    assert (robots.end, robots.final_url, robots.last.status) == (None, "http://other.test/landing", 200)
    assert server.hits_of("other.test") == ["/landing"]


def test_the_time_limit_ends_a_chain_between_hops(server: FaultServer, tmp_path: Path) -> None:
    server.route("r.test", "/a", redirect("/b"))
    server.route("r.test", "/b", redirect("/c"))
    with host_loop(settings_for(server, min_delay=0.3, fetch_time_limit=0.5), "r.test", tmp_path) as loop:
        chain = follow(loop.requests, "http://r.test/a", 50_000, 5, anywhere)
        assert loop.backoff.stopped == "deferred"
    # /a at once, /b after the delay, /c would start past the limit
    assert (chain.end, chain.last, chain.final_url) == ("deferred", None, "http://r.test/c")
    assert [ex.url for ex in chain.exchanges] == ["http://r.test/a", "http://r.test/b"]
    assert server.hits_of("r.test") == ["/a", "/b"]
