"""Per-host delay arithmetic and Retry-After parsing; retry and back-off of one host's run (``Backoff``) on
loopback."""

from __future__ import annotations

import time
from email.utils import formatdate
from pathlib import Path

import pytest

from crawlcycle.fetch.backoff import Stop
from crawlcycle.fetch.politeness import HostPoliteness, parse_retry_after
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.faultserver import FaultServer, page, respond
from tests.support.fetching import gaps, host_loop, settings_for


def settings(**overrides: object) -> Settings:
    base = {"user_agent": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)", "min_delay": 1.0,
            "max_delay": 30.0, "delay_factor": 2.0}
    return load_settings(overrides=base | overrides, environ={})


def test_delay_is_the_largest_ask_capped() -> None:
    pol = HostPoliteness(settings())
    assert pol.delay == 1.0 and pol.next_allowed() == 0.0  # first request: no wait
    pol.record(100.0, 100.2)
    assert pol.delay == 1.0 and pol.next_allowed() == pytest.approx(101.2)
    pol.record(200.0, 203.0)  # slow answer: 2 x 3 s
    assert pol.delay == 6.0 and pol.next_allowed() == pytest.approx(209.0)
    pol.crawl_delay = 10.0
    assert pol.delay == 10.0
    pol.record(300.0, 320.0)  # 2 x 20 s is above max_delay: capped, not deferred
    assert pol.delay == 30.0


def test_hold_pushes_the_next_request() -> None:
    pol = HostPoliteness(settings(min_delay=0.1))
    now = time.time()
    pol.record(now - 0.1, now)
    pol.hold(5.0)
    assert pol.next_allowed() >= now + 5.0


def test_parse_retry_after() -> None:
    now = time.time()
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(formatdate(now + 60, usegmt=True), now) == pytest.approx(60, abs=1.5)
    assert parse_retry_after(formatdate(now - 60, usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None and parse_retry_after(None, now) is None
    assert parse_retry_after("-5", now) is None


def test_a_stored_host_resumes_its_pace() -> None:
    pace = HostPoliteness.resumed(settings(min_delay=0.5, delay_factor=2.0),
                                  {"last_response_ms": 400.0, "last_request_at": 1000.0, "delay": 0.8})
    assert pace.delay == 0.8 and pace.next_allowed() == 1000.8  # 2 x 0.4 s, no request before the stored delay ends
    assert HostPoliteness.resumed(settings(), {}).next_allowed() == 0.0


def test_failures_in_a_row_stop_the_host_and_an_answer_ends_the_run(server: FaultServer, tmp_path: Path) -> None:
    server.route("b.test", "/fail", respond(500, b"down"))
    server.route("b.test", "/ok", page("ok"))
    s = settings_for(server, host_error_limit=3, min_delay=0.0)
    with host_loop(s, "b.test", tmp_path, stored={"errors": 1}) as loop:
        def get(path: str) -> None:
            loop.requests.get(f"http://b.test{path}", 1000)

        get("/fail")  # the run carried from an earlier fetch goes on
        assert (loop.backoff.errors_in_a_row, loop.backoff.stopped) == (2, None)
        get("/ok")
        assert (loop.backoff.errors_in_a_row, loop.backoff.errors_before) == (0, 1)
        for _ in range(2):
            get("/fail")
        assert loop.backoff.stopped is None
        get("/fail")
        assert (loop.backoff.errors_in_a_row, loop.backoff.stopped) == (3, Stop.HOST_ERRORS)


def test_retry_after_holds_the_next_request_or_stops_the_host(server: FaultServer, tmp_path: Path) -> None:
    server.route("w.test", "/short", respond(429, b"slow down", {"Retry-After": "1"}))
    server.route("w.test", "/long", respond(503, b"later", {"Retry-After": "120"}))
    server.route("w.test", "/p", page("p"))
    with host_loop(settings_for(server, max_delay=2.0, host_error_limit=5), "w.test", tmp_path) as loop:
        loop.requests.get("http://w.test/short", 1000)
        loop.requests.get("http://w.test/p", 1000)
        assert loop.backoff.stopped is None and gaps(loop.requests.recorder.requests, "w.test") >= [1.0]
        long = loop.requests.get("http://w.test/long", 1000)
        assert loop.backoff.stopped == Stop.RETRY_AFTER and loop.backoff.backoff_until >= long.finished + 120
        assert loop.backoff.not_before == loop.backoff.backoff_until  # what the journal keeps for a retried fetch


@pytest.mark.parametrize("why", ["stored back-off", "journal of an earlier attempt"])
def test_a_back_off_still_running_stops_the_host_before_it_is_asked(server: FaultServer, tmp_path: Path,
                                                                    why: str) -> None:
    server.route("w.test", "/*", page("p"))
    until = time.time() + 60
    stored, not_before = ({"backoff_until": until}, None) if why == "stored back-off" else ({}, until)
    with host_loop(settings_for(server, max_delay=2.0), "w.test", tmp_path, stored, not_before=not_before) as loop:
        assert loop.backoff.stopped == Stop.RETRY_AFTER and loop.backoff.backoff_until == until
        rows, _ = loop.run(["http://w.test/a"], ["http://w.test"])
    assert [(r["outcome"], r["error_class"]) for r in rows] == [("deferred", "retry_after")] and server.hits == []


def test_an_earlier_attempts_delay_is_waited_out(server: FaultServer, tmp_path: Path) -> None:
    server.route("w.test", "/*", page("p"))
    not_before = time.time() + 0.5  # within max_delay: the delay after the killed attempt's last request
    with host_loop(settings_for(server, max_delay=2.0), "w.test", tmp_path, not_before=not_before) as loop:
        assert loop.backoff.stopped is None
        ex = loop.requests.get("http://w.test/a", 1000)
    assert ex.started >= not_before


def test_the_time_limit_defers_a_turn_that_would_start_past_it(server: FaultServer, tmp_path: Path) -> None:
    server.route("t.test", "/*", page("p"))
    with host_loop(settings_for(server, min_delay=0.3, fetch_time_limit=0.5), "t.test", tmp_path) as loop:
        first, second = (loop.requests.get(f"http://t.test/{i}", 1000) for i in range(2))
        assert first.status == second.status == 200 and loop.backoff.stopped is None
        assert loop.requests.get("http://t.test/2", 1000) is None and loop.backoff.stopped == Stop.DEFERRED
    assert server.hits_of("t.test") == ["/0", "/1"]
