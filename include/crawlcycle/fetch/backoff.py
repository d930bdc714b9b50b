"""Retry and back-off of one host's run: when it asks the host nothing more, and why (``Stop``).

A host's run stops when the fetch's time limit comes before its next turn (``deferred``), after ``host_error_limit``
failures in a row (``host_errors``: 5xx, 429, timeouts, refused or reset connections, DNS, TLS; a run of them
carries over from fetch to fetch until the host answers), when it answers 429 or 503 with a Retry-After beyond
``max_delay`` (``retry_after``: the host is asked nothing until then, in this fetch or a later one; a shorter
Retry-After holds its next request instead), or when its robots.txt shows it has no usable address (``dns``,
``ssrf_blocked``; the robots gate says so). The URLs left carry the reason as their error class.
"""

from __future__ import annotations

import time
from enum import StrEnum

from crawlcycle.contracts.fetch_errors import TRANSIENT, ErrorClass
from crawlcycle.fetch.http_client import Exchange
from crawlcycle.fetch.politeness import HostPoliteness, parse_retry_after
from crawlcycle.settings import Settings


class Stop(StrEnum):
    """Why URLs are left unfetched in a run; the value is their error class in the fetch log."""

    # the whole host (Backoff.stopped)
    DEFERRED = ErrorClass.DEFERRED.value
    HOST_ERRORS = ErrorClass.HOST_ERRORS.value
    RETRY_AFTER = ErrorClass.RETRY_AFTER.value
    DNS = ErrorClass.DNS.value
    SSRF_BLOCKED = ErrorClass.SSRF_BLOCKED.value
    # one origin, by its robots.txt (robots_gate.OriginRobots.closed)
    ROBOTS_UNAVAILABLE = ErrorClass.ROBOTS_UNAVAILABLE.value
    CRAWL_DELAY = ErrorClass.CRAWL_DELAY.value


UNREACHABLE = (Stop.DNS, Stop.SSRF_BLOCKED)  # the host's address: no origin of the host can answer


class Backoff:
    """Whether one host may still be asked in this fetch (``stopped``: None, or why not), and from when.

    ``stored`` is the host's row of the ``hosts`` table ({} for a host never asked); ``not_before`` what the
    politeness journal of an earlier attempt of this fetch says (a Retry-After back-off, or the delay after its last
    request); ``deadline`` the fetch's time limit."""

    def __init__(self, settings: Settings, stored: dict, not_before: float | None, pace: HostPoliteness,
                 deadline: float) -> None:
        self.error_limit, self.max_delay = settings.host_error_limit, settings.max_delay
        self.pace, self.deadline = pace, deadline
        self.errors = 0                                              # failures in a row in this fetch
        self.errors_before = self.carried = stored.get("errors") or 0  # ... before it, until the host answers
        self.backoff_until: float | None = stored.get("backoff_until")
        self.stopped: Stop | None = None
        if not_before is not None:
            if not_before > time.time() + self.max_delay:  # a Retry-After back-off
                self.backoff_until = max(self.backoff_until or 0.0, not_before)
            else:
                pace.not_before(not_before)
        if self.backoff_until and self.backoff_until > time.time():
            self.stop(Stop.RETRY_AFTER)

    def stop(self, reason: Stop) -> None:
        """Ask the host nothing more in this fetch; the URLs left carry the latest reason."""
        self.stopped = reason

    def turn(self) -> float | None:
        """When the next request may start; None, and the host stopped, when that is past the time limit."""
        start = self.pace.next_allowed()
        if max(start, time.time()) >= self.deadline:
            self.stop(Stop.DEFERRED)
            return None
        return start

    def count(self, ex: Exchange) -> None:
        """Count ``ex`` as a failure or, answered, end the run of failures; heed its Retry-After."""
        if ex.error in TRANSIENT or (ex.status or 0) >= 500 or ex.status == 429:
            self.errors += 1
            if self.errors >= self.error_limit:
                self.stop(Stop.HOST_ERRORS)
        elif ex.error is None:
            self.errors = self.carried = 0
        if ex.status in (429, 503):
            wait = parse_retry_after(ex.headers.get("Retry-After"), time.time())
            if wait is not None and wait > self.max_delay:
                self.stop(Stop.RETRY_AFTER)
                self.backoff_until = time.time() + wait
            elif wait is not None:
                self.pace.hold(wait)

    @property
    def not_before(self) -> float:
        """When the host may be asked next, as the politeness journal keeps it."""
        return max(self.pace.next_allowed(), self.backoff_until or 0.0)

    @property
    def errors_in_a_row(self) -> int:
        return self.carried + self.errors
