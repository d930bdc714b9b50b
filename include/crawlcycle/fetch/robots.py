"""robots.txt rules of one origin (RFC 9309: scheme, host and port), built on Protego.

The same object serves the fetcher (right after fetching robots.txt) and later batch checks, which rebuild
it from the stored HTTP status and text of the ``robots`` table.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import duckdb
from protego import Protego

from crawlcycle.settings import Settings

_USER_AGENT = ("user-agent", "useragent", "user agent")
# Records Protego knows (its aliases and misspellings included); any other "name: value" line is dropped,
# because Protego lets it end a run of user-agent lines and RFC 9309 says it must not.
_KNOWN_RECORDS = {*_USER_AGENT, "allow", "disallow", "crawl-delay", "crawl delay", "sitemap", "sitemaps",
                  "site-map", "host", "request-rate", "request rate", "visit-time", "visit time", "dissallow",
                  "dissalow", "disalow", "diasllow", "disallaw"}
_RECORD_NAME = re.compile(r"[a-z][a-z -]*")


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: the scope of one robots.txt (canonical URLs carry no default port)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def robots_url(url: str) -> str:
    """The robots.txt URL governing ``url`` (same scheme and authority)."""
    return f"{origin_of(url)}/robots.txt"


def _clean(text: str) -> str:
    """robots.txt as Protego should read it (line by line: linear time on hostile input)."""
    lines = []
    for line in text.splitlines():
        name, colon, value = line.partition(":")
        name = name.strip().lower()
        if name in _USER_AGENT:
            # A product token ends at the first blank: "User-agent: Foo Bar" is the group of "foo",
            # as Google's parser reads it; Protego would keep the whole value and match nothing.
            token = value.partition("#")[0].split()
            line = f"User-agent: {token[0]}" if token else line
        elif colon and name not in _KNOWN_RECORDS and _RECORD_NAME.fullmatch(name):
            continue
        lines.append(line)
    return "\n".join(lines)


class RobotsRules:
    """What one robots.txt answer allows for one user-agent token.

    ``status`` is the HTTP status of the last robots.txt hop, or None when it could not be fetched:
    2xx → the rules of ``text``; 3xx left over (too many redirects) and 4xx → everything allowed;
    5xx or unreachable → nothing allowed.
    """

    def __init__(self, status: int | None, text: str | None, token: str) -> None:
        self.status = status
        self.token = token
        self.disallow_all = status is None or status >= 500
        self._parser = Protego.parse(_clean(text or "")) if 200 <= (status or 0) < 300 else None

    @classmethod
    def from_stored(cls, status: int | None, text: str | None, token: str) -> RobotsRules:
        """Rules rebuilt from a robots row (status, robots_txt), for checks ahead of fetching.

        An unavailable answer (5xx or unreachable) blocks a host for one fetch only and is asked again
        at the next fetch, so here it allows everything: only a robots.txt that was read excludes URLs early.
        """
        if status is None or status >= 500:
            status, text = 404, None  # read like "no robots.txt": allow all
        return cls(status, text, token)

    def allowed(self, url: str) -> bool:
        if self._parser is None:
            return not self.disallow_all
        return self._parser.can_fetch(url, self.token)

    @property
    def crawl_delay(self) -> float | None:
        return self._parser.crawl_delay(self.token) if self._parser else None

    @property
    def sitemaps(self) -> list[str]:
        return list(self._parser.sitemaps) if self._parser else []


class StoredRobots:
    """The robots rules stored per origin (rows of origin, status, robots_txt), for checks ahead of fetching:
    a URL whose origin has no stored robots.txt yet is allowed (the fetcher asks when it gets there). An origin's
    file is parsed when one of its URLs is first checked: a batch's candidates come from a small part of the origins
    a large crawl knows."""

    def __init__(self, rows: list[dict], token: str) -> None:
        self.token = token
        self.stored = {r["origin"]: (r["status"], r["robots_txt"]) for r in rows}
        self.rules: dict[str, RobotsRules] = {}

    def allowed(self, url: str) -> bool:
        origin = origin_of(url)
        if origin not in self.stored:
            return True
        if origin not in self.rules:
            self.rules[origin] = RobotsRules.from_stored(*self.stored[origin], self.token)
        return self.rules[origin].allowed(url)


def stored_robots(con: duckdb.DuckDBPyConnection, settings: Settings) -> StoredRobots:
    """The robots rules stored per origin by earlier fetches."""
    return StoredRobots(con.sql("SELECT origin, status, robots_txt FROM robots").pl().to_dicts(),
                        settings.robots_token)
