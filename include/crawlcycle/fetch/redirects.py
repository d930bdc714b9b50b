"""Following redirects: one request and the hops after it, each at the host's turn, recorded as a ``Chain``.

A chain ends at an answer (a response that is not a redirect) or, short of one (``Chain.end``), at a failed exchange
(its error class), the time limit (``deferred``), a redirect without a usable target (``bad_redirect``;
``bad_scheme`` for one to another scheme), a target met before (``redirect_loop``; robots.txt and sitemaps revisit
instead, until the limit), a target the caller does not follow (``Chain.unfollowed``: the redirect is the answer), or a
hop past ``limit`` (``too_many_redirects``). Which targets a chain follows is the caller's rule: a page or a sitemap
only to its own host's URLs that robots.txt allows, a robots.txt to any host (RFC 9309).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crawlcycle.contracts.canonical import BAD_SCHEME, UrlRejected, UrlRules, canonicalize, host_of
from crawlcycle.contracts.fetch_errors import ErrorClass
from crawlcycle.fetch.exchange import HostRequests
from crawlcycle.fetch.http_client import Exchange, StoredCopy

_REDIRECTS = (301, 302, 303, 307, 308)


@dataclass
class Chain:
    """The exchanges of one request and its redirects."""

    exchanges: list[Exchange] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)  # redirect targets met, in order (a bad one as written)
    final_url: str | None = None  # the answer's URL, else the last good target met (None: none)
    end: ErrorClass | None = None  # why it ended short of an answer (module docstring); None: the last is one
    unfollowed: bool = False       # the last is a redirect to a target the caller does not follow: the answer

    @property
    def last(self) -> Exchange | None:
        """The exchange that ended the chain; None when the time limit came first."""
        return None if self.end == ErrorClass.DEFERRED else self.exchanges[-1]


def follow(requests: HostRequests, url: str, max_bytes: int, limit: int, may_follow: Callable[[str], bool],
           revisits: bool = False, stored: StoredCopy | None = None) -> Chain:
    """GET ``url`` (conditional on ``stored``, the stored copy of a page fetched again) and follow its redirects to the
    targets ``may_follow`` allows, up to ``limit`` hops; with ``revisits``, a target met before is asked again (only
    the limit ends a loop)."""
    chain, seen = Chain(), {url}
    while True:
        ex = requests.get(url, max_bytes, None if chain.exchanges else stored)  # a hop is a URL of its own
        if ex is None:
            chain.end = ErrorClass.DEFERRED
            return chain
        chain.exchanges.append(ex)
        if ex.error:
            chain.end = ex.error
            return chain
        target, error = redirect_target(ex, requests.settings.url_rules)
        if target is None and error is None:
            chain.final_url = url
            return chain
        if target:
            chain.targets.append(target)
        if error:
            chain.end = error
            return chain
        chain.final_url = target
        if target in seen and not revisits:
            chain.end = ErrorClass.REDIRECT_LOOP
        elif not may_follow(target):
            chain.unfollowed = True
        elif len(chain.targets) > limit:
            chain.end = ErrorClass.TOO_MANY_REDIRECTS
        if chain.end or chain.unfollowed:
            return chain
        seen.add(target)
        url = target


def within(host: str, allows: Callable[[str], bool]) -> Callable[[str], bool]:
    """The rule of a page's or a sitemap's chain: a target of ``host`` that robots.txt ``allows``."""
    return lambda target: host_of(target) == host and allows(target)


def redirect_target(ex: Exchange, rules: UrlRules) -> tuple[str | None, str | None]:
    """(canonical target, None) of a redirect, (raw target, error class) of a bad one, (None, None) if
    the response is not a redirect."""
    if ex.status not in _REDIRECTS:
        return None, None
    location = (ex.headers.get("Location") or "").strip()
    if not location:
        return "", ErrorClass.BAD_REDIRECT
    try:
        return canonicalize(location, ex.url, rules), None
    except UrlRejected as e:
        return location, ErrorClass.BAD_SCHEME if e.reason == BAD_SCHEME else ErrorClass.BAD_REDIRECT
