"""When the next request to one host may start: configured minimum, Crawl-delay, adaptive delay, back-off,
and the journal that carries it across a killed and retried fetch."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from pathlib import Path

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

    def not_before(self, when: float) -> None:
        """No request before ``when`` (the delay after a request of an earlier fetch of this host)."""
        self.hold_until = max(self.hold_until, when)


class Journal:
    """When each host may be asked next, appended to a file as each request starts and ends, so that a fetch
    killed half-way and retried waits out the delay after its last request. ``synced``, when given, copies the
    file where a retry on another machine finds it: a thread runs it whenever the file has grown, so the fetch
    never waits for storage (what a kill loses is what was written during the last copy)."""

    def __init__(self, path: Path, synced: Callable[[], None] | None = None) -> None:
        self.path, self.synced = Path(path), synced
        self._file = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self._grown = threading.Event()
        self._closed = False
        self._syncer = threading.Thread(target=self._sync_loop, name="journal sync", daemon=True) if synced else None
        if self._syncer:
            self._syncer.start()

    def record(self, host: str, not_before: float) -> None:
        with self._lock:
            self._file.write(json.dumps({"host": host, "not_before": not_before}) + "\n")
            self._file.flush()  # in the OS's hands now: a killed process loses nothing written
        self._grown.set()

    def close(self) -> None:
        with self._lock:
            self._file.close()
            self._closed = True
        if self._syncer:
            self._grown.set()
            self._syncer.join()

    def _sync_loop(self) -> None:
        while True:
            self._grown.wait()
            self._grown.clear()
            try:
                self.synced()  # type: ignore[misc]
            except Exception as e:  # storage trouble must not stop the fetch; the next growth tries again
                logging.getLogger("crawlcycle").warning("politeness journal not stored: %s", e)
            if self._closed:
                return


def read_journal(path: Path) -> dict[str, float]:
    """Per host, the earliest time of its next request according to a journal (empty if there is none).
    A line cut by a kill is skipped."""
    out: dict[str, float] = {}
    if not Path(path).is_file():
        return out
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            out[row["host"]] = max(out.get(row["host"], 0.0), float(row["not_before"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out
