"""When the next request to one host may start: configured minimum, Crawl-delay, adaptive delay, back-off."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

from crawlcycle.settings import Settings


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None if unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


class HostPoliteness:
    """Politeness state of one host during one fetch call; one request in flight at a time.

    The gap is counted from the end of the previous response to the start of the next request:
    delay = max(min_delay, Crawl-delay, delay_factor x last response time), at most max_delay.
    """

    def __init__(self, settings: Settings, crawl_delay: float | None = None) -> None:
        self.min_delay = settings.min_delay
        self.max_delay = settings.max_delay
        self.factor = settings.delay_factor
        self.crawl_delay = crawl_delay
        self.last_finished: float | None = None
        self.last_response: float | None = None
        self.hold_until = 0.0

    @property
    def delay(self) -> float:
        adaptive = self.factor * (self.last_response or 0.0)
        return min(self.max_delay, max(self.min_delay, self.crawl_delay or 0.0, adaptive))

    def asks_too_much(self) -> bool:
        """A Crawl-delay above max_delay: the host is deferred rather than crawled faster than it asks."""
        return self.crawl_delay is not None and self.crawl_delay > self.max_delay

    def next_allowed(self) -> float:
        if self.last_finished is None:
            return self.hold_until
        return max(self.last_finished + self.delay, self.hold_until)

    def record(self, started: float, finished: float) -> None:
        self.last_finished = finished
        self.last_response = finished - started

    def hold(self, seconds: float) -> None:
        """Back off (Retry-After): no request before now + seconds."""
        self.hold_until = max(self.hold_until, time.time() + seconds)
