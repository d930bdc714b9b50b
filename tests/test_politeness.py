"""Per-host delay arithmetic and Retry-After parsing."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from crawlcycle.fetch.politeness import HostPoliteness, parse_retry_after
from crawlcycle.settings import Settings, load_settings


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
