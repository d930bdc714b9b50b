"""The robots gate of one host's run: robots.txt of each origin of the host (RFC 9309: scheme, host, port).

An origin's robots.txt is the stored one while it is younger than ``robots_ttl`` and was answered below 500; else it
is fetched when the first URL of the origin comes up (a probe always fetches it), following up to five redirects, to
any host. Its answer decides: 2xx, the rules for ``robots_token``; 4xx, or a redirect left over, everything allowed;
5xx or no answer, nothing (the origin is closed, ``robots_unavailable``). An obeyed Crawl-delay sets the host's pace
(its slowest origin's), or closes the origin when above ``max_delay`` (``crawl_delay``). A robots.txt whose own host
has no address, or one the SSRF guard refuses, stops the host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from crawlcycle.contracts.canonical import host_of
from crawlcycle.fetch.backoff import UNREACHABLE, Backoff, Stop
from crawlcycle.fetch.exchange import HostRequests
from crawlcycle.fetch.politeness import HostPoliteness
from crawlcycle.fetch.redirects import follow
from crawlcycle.fetch.robots import RobotsRules, origin_of
from crawlcycle.settings import Settings

_ROBOTS_REDIRECTS = 5  # RFC 9309: follow at least five


@dataclass
class OriginRobots:
    """robots.txt of one origin as a run knows it."""

    row: dict                        # a row of shard_files.ROBOTS
    rules: RobotsRules | None = None  # None: unknown (the host stopped while it was asked)
    fetched: bool = False            # fetched in this run (its sitemaps are read)
    closed: Stop | None = None       # why none of its URLs go

    def allows(self, url: str) -> bool:
        return self.closed is None and self.rules is not None and self.rules.allowed(url)


class RobotsGate:
    """robots.txt of the origins of ``host``, each asked once per run; ``stored`` holds the rows of the ``robots``
    table by origin."""

    def __init__(self, host: str, settings: Settings, stored: dict[str, dict], requests: HostRequests,
                 backoff: Backoff, pace: HostPoliteness) -> None:
        self.host, self.settings, self.stored = host, settings, stored
        self.requests, self.backoff, self.pace = requests, backoff, pace
        self.origins: dict[str, OriginRobots] = {}

    def allows(self, url: str) -> bool:
        """Whether robots.txt of the URL's origin allows it (asking that robots.txt if this run has not)."""
        return self.origin(origin_of(url)).allows(url)

    def origin(self, origin: str, probe: bool = False) -> OriginRobots:
        """robots.txt of ``origin``: stored within robots_ttl (not for a ``probe``), else fetched now. If the host
        stops while it is fetched (time limit, address, too many errors), the origin stays unknown."""
        if origin in self.origins:
            return self.origins[origin]
        s = self.settings
        stored = self.stored.get(origin, {})
        state = OriginRobots({"origin": origin, "host": self.host, "status": stored.get("status"),
                              "fetched_at": stored.get("fetched_at"), "robots_txt": stored.get("robots_txt")})
        row = state.row
        fresh = not probe and row["fetched_at"] is not None and time.time() - row["fetched_at"] < s.robots_ttl and \
            row["status"] is not None and row["status"] < 500
        if not fresh:
            fetched_at = time.time()
            status, text = self._fetch(f"{origin}/robots.txt")
            if self.backoff.stopped is not None:
                return state
            row.update(status=status, robots_txt=text, fetched_at=fetched_at)
            state.fetched = True
        state.rules = rules = RobotsRules(row["status"], row["robots_txt"], s.robots_token)
        row.update(crawl_delay=rules.crawl_delay, sitemaps=rules.sitemaps)
        delay = rules.crawl_delay if s.obey_crawl_delay else None
        if rules.disallow_all:
            state.closed = Stop.ROBOTS_UNAVAILABLE
        elif delay is not None and delay > s.max_delay:
            state.closed = Stop.CRAWL_DELAY  # deferred rather than crawled faster than it asks
        elif delay is not None:
            self.pace.crawl_delay = max(self.pace.crawl_delay or 0.0, delay)  # the host's slowest origin sets the pace
        self.origins[origin] = state
        return state

    def sitemaps(self) -> list[tuple[str, str]]:
        """(location as written, the robots.txt URL it was found at) of the sitemaps of the origins whose robots.txt
        this run fetched and that are open: those it names, or ``/sitemap.xml`` (``sitemap_fallback``)."""
        fallback = ["/sitemap.xml"] if self.settings.sitemap_fallback else []
        listed = []
        for origin, state in self.origins.items():
            if state.fetched and state.closed is None and state.rules is not None:
                listed += [(loc, f"{origin}/robots.txt") for loc in state.rules.sitemaps or fallback]
        return listed

    def rows(self) -> list[dict]:
        """The robots rows of the origins this run asked (rows of ``shard_files.ROBOTS``)."""
        return [state.row for state in self.origins.values()]

    def _fetch(self, url: str) -> tuple[int | None, str | None]:
        """(status, text) of the robots.txt at ``url``: (None, None) without an answer, no text but for a 2xx."""
        ex = follow(self.requests, url, self.settings.robots_max_bytes, _ROBOTS_REDIRECTS, lambda target: True,
                    revisits=True).last
        if ex is None:
            return None, None
        if ex.error in UNREACHABLE and host_of(ex.url) == self.host:
            self.backoff.stop(Stop(ex.error))  # the host's address: nothing of any of its origins goes
        if ex.error:
            return None, None
        if not 200 <= ex.status < 300:  # type: ignore[operator]  # 3xx left over reads like no robots.txt
            return ex.status, None
        text = ex.body.decode("utf-8", "replace")
        # A cut-off last line could be a shortened (stricter or looser) rule: drop it.
        return ex.status, text.rpartition("\n")[0] if ex.truncated else text
