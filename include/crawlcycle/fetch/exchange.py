"""The request/response step of a fetch: one GET of one host's run, at the host's turn, and what it leaves behind.

Every request of a fetch goes through ``HostRequests.get``, pages and their redirects, robots.txt and sitemaps
alike: it waits for the host's turn (politeness; none past the time limit), journals the request as it goes out,
sends it (``http_client``; conditional when it fetches a stored page again), records it (``Recorder``: WARC, request
log), counts it for the host's back-off, notes the try of its origin, and journals when the host may be asked next.
A conditional request takes its turn like any other: a 304 saves the body, not the politeness.
"""

from __future__ import annotations

import threading
import time

from crawlcycle.contracts.canonical import host_of
from crawlcycle.fetch.backoff import Backoff
from crawlcycle.fetch.http_client import Client, Exchange, StoredCopy
from crawlcycle.fetch.politeness import HostPoliteness, Journal
from crawlcycle.fetch.robots import origin_of
from crawlcycle.fetch.warc_output import WarcOutput
from crawlcycle.settings import Settings


class Recorder:
    """What the host runs of one fetch call write to, one at a time: the WARC file, the request log (``requests``,
    rows of ``shard_files.REQUESTS``) and the politeness journal."""

    def __init__(self, warc: WarcOutput, journal: Journal) -> None:
        self.warc, self.journal = warc, journal
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    def record(self, ex: Exchange) -> dict | None:
        """Log the exchange (WARC) and, if it reached the server, its request row; return the row."""
        row = None
        with self._lock:
            if ex.contacted:
                row = {"host": host_of(ex.url), "url": ex.url, "started_at": ex.started, "finished_at": ex.finished,
                       "status": ex.status, "error_class": ex.error, "new_connection": ex.new_connection,
                       "attempt": self.journal.attempt}
                self.requests.append(row)
            if ex.request:
                self.warc.write(ex)
        return row


class HostRequests:
    """The requests of one host's run, one at a time over ``client``'s connections. ``tries`` holds, per origin of
    the host, when its last request ended and its failure class (None: it answered)."""

    def __init__(self, host: str, settings: Settings, client: Client, pace: HostPoliteness, backoff: Backoff,
                 recorder: Recorder) -> None:
        self.host, self.settings, self.client = host, settings, client
        self.pace, self.backoff, self.recorder = pace, backoff, recorder
        self.tries: dict[str, tuple[float, str | None]] = {}

    def get(self, url: str, max_bytes: int, stored: StoredCopy | None = None) -> Exchange | None:
        """One GET at the first moment politeness allows, conditional on the validators of ``stored`` (the stored copy
        of a page fetched again); None (the host stopped) if that is past the time limit."""
        start = self.backoff.turn()
        if start is None:
            return None
        while (left := start - time.time()) > 0:
            time.sleep(left)
        # Journaled before it goes out too: a fetch killed in the middle of this request leaves its start.
        self.recorder.journal.record(self.host, time.time() + self.pace.delay,
                                     sent={"url": url, "started_at": time.time()})
        ex = self.client.get(url, max_bytes, self.backoff.deadline, stored)
        request = self.recorder.record(ex)
        if ex.contacted:
            self.pace.record(ex.started, ex.finished)
        if host_of(url) == self.host:  # a robots.txt redirected to another host is that host's origin
            failure = ex.error or ("server_error" if (ex.status or 0) >= 500 else None)
            self.tries[origin_of(url)] = (ex.finished, failure)
        self.backoff.count(ex)
        if ex.contacted:
            self.recorder.journal.record(self.host, self.backoff.not_before, request=request)
        return ex

    def target_blocked(self, url: str) -> bool:
        """Whether the SSRF guard refuses the address of ``url`` (a redirect target not followed now)."""
        return self.client.target_blocked(url)

    def close(self) -> None:
        self.client.close()
