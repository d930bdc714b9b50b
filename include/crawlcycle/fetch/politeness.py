"""When the next request to one host may start: configured minimum, Crawl-delay, adaptive delay, back-off,
and the journal that carries it across a killed and retried fetch."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path

from crawlcycle.contracts.fetch_errors import ErrorClass
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

    @classmethod
    def resumed(cls, settings: Settings, stored: dict) -> HostPoliteness:
        """The politeness of a host as its row of the ``hosts`` table left it ({} for a host never asked): the time
        its last response took, and no request before the delay after its last one."""
        pace = cls(settings)
        if stored.get("last_response_ms") is not None:
            pace.last_response = stored["last_response_ms"] / 1000.0
        if stored.get("last_request_at") is not None and stored.get("delay") is not None:
            pace.not_before(stored["last_request_at"] + stored["delay"])
        return pace

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
    """The fetch's journal, appended to a file as each request starts and ends: when the host may be asked next,
    and the request itself. A fetch killed half-way and retried waits out the delay after the last request of the
    attempt that died, and keeps that attempt's requests (they reached the servers) in its own request log.
    ``synced``, when given, copies the file where a retry on another machine finds it: a thread runs it whenever
    the file has grown, so the fetch never waits for storage (what a kill loses is what was written during the
    last copy)."""

    def __init__(self, path: Path, synced: Callable[[], None] | None = None) -> None:
        self.path, self.synced = Path(path), synced
        self.earlier = read_journal(self.path)
        self.attempt = self.earlier.attempts + 1
        self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps({"attempt": self.attempt}) + "\n")
        self._lock = threading.Lock()
        self._grown = threading.Event()
        self._closed = False
        self._syncer = threading.Thread(target=self._sync_loop, name="journal sync", daemon=True) if synced else None
        if self._syncer:
            self._syncer.start()

    def record(self, host: str, not_before: float, sent: dict | None = None, request: dict | None = None) -> None:
        """``host`` may be asked again from ``not_before``; ``sent``: a request (url, started_at) goes out now,
        ``request``: the row of the one that just ended."""
        line = {"host": host, "not_before": not_before, "sent": sent, "request": request}
        with self._lock:
            self._file.write(json.dumps({k: v for k, v in line.items() if v is not None}) + "\n")
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


@dataclass
class EarlierAttempts:
    """What a journal holds of the attempts before this one: per host, the earliest time of its next request;
    how many attempts there were; and every request they sent, numbered by attempt (one in flight when its
    attempt was killed has no end: ``finished_at`` None, ``error_class`` 'interrupted')."""

    not_before: dict[str, float] = field(default_factory=dict)
    attempts: int = 0
    requests: list[dict] = field(default_factory=list)


def read_journal(path: Path, now: float | None = None) -> EarlierAttempts:
    """The earlier attempts of a journal (none if there is no file). A line cut by a kill is skipped. A request in
    flight when its attempt was killed may have been answered up to the kill, which came before ``now`` (default:
    the time of the call): its host waits the delay from ``now``."""
    now = time.time() if now is None else now
    out = EarlierAttempts()
    if not Path(path).is_file():
        return out
    in_flight: dict[str, dict] = {}  # per host: one request at a time

    def interrupted() -> None:
        for host, sent in in_flight.items():
            out.not_before[host] = max(out.not_before[host], now + sent.pop("delay"))
            out.requests.append(sent)
        in_flight.clear()

    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
            if "attempt" in row:
                interrupted()
                out.attempts = int(row["attempt"])
                continue
            host = row["host"]
            out.not_before[host] = max(out.not_before.get(host, 0.0), float(row["not_before"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if isinstance(row.get("sent"), dict):
            in_flight[host] = {"host": host, "finished_at": None, "status": None, "error_class": ErrorClass.INTERRUPTED,
                               "new_connection": None, **row["sent"], "attempt": out.attempts,
                               "delay": float(row["not_before"]) - float(row["sent"]["started_at"])}
        if isinstance(row.get("request"), dict):
            in_flight.pop(host, None)
            out.requests.append({**row["request"], "attempt": out.attempts})
    interrupted()
    return out
