"""One host's run in a fetch: the robots.txt of its origins to probe, its batch URLs in order, then its sitemaps,
one request at a time.

A run composes the parts, each in a module of its own: the request/response step every request goes through
(``exchange``), retry and back-off, which say when the run stops and why (``backoff``), robots.txt per origin
(``robots_gate``), redirects (``redirects``) and sitemaps (``sitemap_reader``). A URL left when the host or its
origin stopped gets the reason as its error class; one robots.txt disallows is not asked. A stored page fetched
again is asked conditionally, with the validators of its stored copy.
"""

from __future__ import annotations

import time

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.fetch_errors import ErrorClass
from crawlcycle.fetch.backoff import UNREACHABLE, Backoff, Stop
from crawlcycle.fetch.exchange import HostRequests, Recorder
from crawlcycle.fetch.fetch_log import finish, new_row, page_row
from crawlcycle.fetch.http_client import Client, StoredCopy
from crawlcycle.fetch.politeness import HostPoliteness
from crawlcycle.fetch.redirects import follow, within
from crawlcycle.fetch.robots import origin_of
from crawlcycle.fetch.robots_gate import RobotsGate
from crawlcycle.fetch.sitemap_reader import SitemapReader
from crawlcycle.settings import Settings


class HostLoop:
    """The run of ``host``: ``stored`` is its row of the ``hosts`` table ({} if never asked), ``stored_robots`` the
    rows of the ``robots`` table of its origins by origin, ``not_before`` what an earlier attempt of this fetch
    journaled for it (None: nothing)."""

    def __init__(self, host: str, settings: Settings, client: Client, recorder: Recorder, deadline: float,
                 stored: dict, stored_robots: dict[str, dict], not_before: float | None) -> None:
        self.host, self.settings, self.stored = host, settings, stored
        self.pace = HostPoliteness.resumed(settings, stored)
        self.backoff = Backoff(settings, stored, not_before, self.pace, deadline)
        self.requests = HostRequests(host, settings, client, self.pace, self.backoff, recorder)
        self.robots = RobotsGate(host, settings, stored_robots, self.requests, self.backoff, self.pace)
        self.sitemaps = SitemapReader(host, settings, self.requests, self.robots, self.backoff)

    def run(self, urls: list[str], probes: list[str], copies: dict[str, StoredCopy] | None = None
            ) -> tuple[list[dict], dict[str, list[dict]]]:
        """Fetch-log rows of ``urls`` (in order), after the robots.txt of the origins in ``probes``; and the rows the
        run leaves for the shard's other files, by file name. ``copies`` holds the stored copies of the URLs that are
        pages fetched again."""
        try:
            for origin in probes:
                if self.backoff.stopped is None:
                    self.robots.origin(origin, probe=True)
            rows = [self._visit(url, (copies or {}).get(url)) for url in urls]
            self.sitemaps.read(self.robots.sitemaps())
        finally:
            self.requests.close()
        return rows, {shard_files.HOSTS: [self._host_row()], shard_files.ROBOTS: self.robots.rows(),
                      shard_files.SITEMAPS: self.sitemaps.files, shard_files.SITEMAP_URLS: self.sitemaps.urls,
                      shard_files.ORIGIN_TRIES: self._origin_tries({origin_of(url) for url in urls})}

    def _visit(self, url: str, stored: StoredCopy | None) -> dict:
        origin = self.robots.origin(origin_of(url)) if self.backoff.stopped is None else None
        stop = self.backoff.stopped or (origin.closed if origin else None)
        if stop in UNREACHABLE:  # no origin of the host can answer: this one did not either
            self.requests.tries.setdefault(origin_of(url), (time.time(), stop.value))
        if stop is not None:
            return finish(new_row(url, self.host, error_class=stop.value))
        if not origin.allows(url):  # type: ignore[union-attr]
            return finish(new_row(url, self.host, error_class=ErrorClass.ROBOTS_DISALLOWED))
        # Redirects to this host's URLs robots.txt allows are followed now, each at its turn; others are the
        # URL's answer, and the cycle admits their targets to the frontier.
        s = self.settings
        chain = follow(self.requests, url, s.max_body_bytes, s.max_redirects, within(self.host, self.robots.allows),
                       stored=stored)
        blocked = chain.unfollowed and self.requests.target_blocked(chain.targets[-1])
        return page_row(url, self.host, chain, blocked)

    def _host_row(self) -> dict:
        """The host's row of ``shard_files.HOSTS``: its pace and back-off as this run leaves them."""
        last = self.pace.last_response
        return {"host": self.host, "crawl_delay": self.pace.crawl_delay, "delay": self.pace.delay,
                "last_response_ms": None if last is None else last * 1000.0,  # kept when this run sent nothing
                "errors": self.backoff.errors_in_a_row, "errors_before": self.backoff.errors_before,
                "backoff_until": self.backoff.backoff_until,
                "last_request_at": self.pace.last_finished or self.stored.get("last_request_at")}

    def _origin_tries(self, batch_origins: set[str]) -> list[dict]:
        """One row per origin of this host that was tried: whether it answered, or the class of why not. An origin
        did not answer when its robots.txt could not be read, when the host had no usable address, or when the run
        stopped after ``host_error_limit`` failures in a row and its last request was one of them."""
        out = []
        for origin, (tried_at, error) in sorted(self.requests.tries.items()):
            state = self.robots.origins.get(origin)
            if state is not None and state.closed == Stop.ROBOTS_UNAVAILABLE:
                status = state.row["status"]
                error = ErrorClass.ROBOTS_SERVER_ERROR if status is not None and status >= 500 else error
            elif not (self.backoff.stopped in UNREACHABLE or self.backoff.stopped == Stop.HOST_ERRORS):
                error = None
            out.append({"origin": origin, "host": self.host, "probe": origin not in batch_origins,
                        "tried_at": tried_at, "error_class": error})
        return out
