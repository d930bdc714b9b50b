"""The sitemap reader of one host's run: after its batch URLs, the sitemaps its robots.txt files name.

Sitemaps are read first come, first read, an index's sitemaps after those before them, down to ``sitemap_max_depth``
levels below robots.txt; each file is fetched like a page of the host (at its turn, if robots.txt allows it, same-host
redirects only), at most ``sitemap_max_files`` of them and ``sitemap_max_bytes`` each (``sitemaps.read_sitemap``).
A sitemap speaks for its own host: another host's sitemap is left to that host's run, another host's URL is not
admitted. URLs of the host are admitted once each, up to ``max_urls_per_host``. Every file is a row of ``files``
(``shard_files.SITEMAPS``: with the reason it was not read, or not read whole, and its lastmods left out), every URL
listed a row of ``urls`` (``shard_files.SITEMAP_URLS``: with the reason it was not admitted, or its lastmod).
"""

from __future__ import annotations

from collections import deque
from datetime import datetime

from crawlcycle.contracts.canonical import UrlRejected, canonicalize, host_of
from crawlcycle.contracts.fetch_errors import ErrorClass
from crawlcycle.fetch.backoff import Backoff, Stop
from crawlcycle.fetch.exchange import HostRequests
from crawlcycle.fetch.redirects import follow, within
from crawlcycle.fetch.robots_gate import RobotsGate
from crawlcycle.fetch.sitemaps import read_sitemap
from crawlcycle.settings import Settings


class SitemapReader:
    """Reads the sitemaps of ``host`` through its run's requests, robots gate and back-off."""

    def __init__(self, host: str, settings: Settings, requests: HostRequests, robots: RobotsGate,
                 backoff: Backoff) -> None:
        self.host, self.settings = host, settings
        self.requests, self.robots, self.backoff = requests, robots, backoff
        self.files: list[dict] = []
        self.urls: list[dict] = []
        self._admitted: set[str] = set()
        self._fetched = 0

    def read(self, listed: list[tuple[str, str]]) -> None:
        """Read the sitemaps ``listed`` (location as written, the URL it was found at) and those they index."""
        s = self.settings
        queue = deque((loc, base, 0) for loc, base in listed)
        seen: set[str] = set()
        while queue:
            loc, base, depth = queue.popleft()
            try:
                url, reason = canonicalize(loc, base, s.url_rules, binary_ok=True), None
            except UrlRejected as e:
                url, reason = loc, e.reason
            if url in seen:
                continue
            seen.add(url)
            record = {"url": url, "host": self.host, "depth": depth, "status": None, "kind": None, "entries": 0,
                      "admitted": 0, "reason": reason or self._skipped(url, depth), "bad_lastmods": 0}
            self.files.append(record)
            if record["reason"]:
                continue
            self._fetched += 1
            ex = follow(self.requests, url, s.sitemap_max_bytes, s.max_redirects,
                        within(self.host, self.robots.allows), revisits=True).last
            if ex is None:
                record["reason"] = Stop.DEFERRED.value
                continue
            if ex.error or not 200 <= (ex.status or 0) < 300:
                record.update(status=ex.status, reason=ex.error or ErrorClass.HTTP_ERROR)
                continue
            sitemap = read_sitemap(ex.body, s.sitemap_max_bytes, ex.truncated)
            record.update(status=ex.status, kind=sitemap.kind, entries=len(sitemap.locs), reason=sitemap.reason,
                          bad_lastmods=sitemap.bad_lastmods)
            for loc, lastmod in zip(sitemap.locs, sitemap.lastmods, strict=True):
                if sitemap.kind == "sitemapindex":
                    queue.append((loc, url, depth + 1))
                else:
                    self._admit(loc, lastmod, url, record)

    def _admit(self, loc: str, lastmod: datetime | None, sitemap: str, record: dict) -> None:
        """Admit the URL ``loc`` listed by ``sitemap`` (its ``record``) with its ``lastmod``, or say why not."""
        s = self.settings
        try:
            target = canonicalize(loc, sitemap, s.url_rules)
        except UrlRejected as e:
            self.urls.append({"sitemap": sitemap, "url": loc, "reason": e.reason})
            return
        if host_of(target) != self.host:
            self.urls.append({"sitemap": sitemap, "url": loc, "reason": "sitemap_off_host"})
        elif len(self._admitted) >= s.max_urls_per_host:
            record["reason"] = record["reason"] or "url_cap"
        elif target not in self._admitted:
            self._admitted.add(target)
            self.urls.append({"sitemap": sitemap, "url": target, "reason": None, "lastmod": lastmod})
            record["admitted"] += 1

    def _skipped(self, url: str, depth: int) -> str | None:
        """Why the sitemap at ``url`` is not fetched, or None to fetch it."""
        if depth > self.settings.sitemap_max_depth:
            return "depth_limit"
        if host_of(url) != self.host:
            return "off_host"  # fetched by the run of its own host, when its robots.txt names it
        if self.backoff.stopped is not None:
            return self.backoff.stopped.value
        if self._fetched >= self.settings.sitemap_max_files:
            return "file_limit"
        return None if self.robots.allows(url) else ErrorClass.ROBOTS_DISALLOWED
