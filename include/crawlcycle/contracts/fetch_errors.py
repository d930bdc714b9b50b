"""Why a fetch gave no page, or why no fetch was sent: the error classes of ``fetch_log.error_class`` and
``origin_tries.error_class``, and what each means for the URL (its ``FetchOutcome``) and for its batch slot.

The fetch path writes only these; SQL reads them through the macros of :func:`sql_macros` (``error_<name>()``, and the
lists below), which ``db.migrate`` creates. docs/reference/tables.md, "Error classes", describes each.

Standard library only, as every module of ``contracts``.
"""

from __future__ import annotations

from enum import StrEnum

from crawlcycle.contracts.url_states import NOT_ASKED, FetchOutcome, sql_list


class ErrorClass(StrEnum):
    """An error class of the fetch log or of an origin's try."""

    # no answer, for now
    TIMEOUT = "timeout"
    DNS = "dns"
    CONNECTION = "connection"
    TLS = "tls"
    # an answer that is not a page
    HTTP_ERROR = "http_error"                  # 4xx or 5xx: the status decides the outcome
    TOO_LARGE = "too_large"                    # the body was cut at max_bytes: still a page
    BAD_ENCODING = "bad_encoding"
    # a redirect that cannot be followed
    BAD_SCHEME = "bad_scheme"
    BAD_REDIRECT = "bad_redirect"
    REDIRECT_LOOP = "redirect_loop"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    SSRF_BLOCKED = "ssrf_blocked"              # a private or local address (allow_networks exempts)
    # not asked
    ROBOTS_DISALLOWED = "robots_disallowed"
    DEFERRED = "deferred"                      # fetch_time_limit reached first
    RETRY_AFTER = "retry_after"                # host backed off by Retry-After beyond max_delay
    CRAWL_DELAY = "crawl_delay"                # origin asks for a Crawl-delay beyond max_delay
    HOST_ERRORS = "host_errors"                # host_error_limit consecutive errors
    # robots.txt 5xx or unreachable: nothing of its origin was asked; the origin's back-off (origin_tries) decides
    # when its URLs take batch slots again, and they keep their attempts
    ROBOTS_UNAVAILABLE = "robots_unavailable"
    # an origin's try only (origin_tries): it answered, but only 4xx to every URL asked, and never gave a page
    NO_PAGES = "no_pages"
    # an origin's try only: its robots.txt answered 5xx (robots_unavailable for its URLs)
    ROBOTS_SERVER_ERROR = "robots_server_error"
    # a fetch killed mid-request (the politeness log of an interrupted shard)
    INTERRUPTED = "interrupted"


TRANSIENT = (ErrorClass.TIMEOUT, ErrorClass.CONNECTION, ErrorClass.DNS, ErrorClass.TLS)
# The classes that decide the outcome on their own; the status decides it for BY_STATUS (None: no error).
OUTCOME: dict[ErrorClass, FetchOutcome] = {
    **{c: FetchOutcome.RETRY_PENDING for c in TRANSIENT},
    ErrorClass.ROBOTS_DISALLOWED: FetchOutcome.DISALLOWED,
    **{c: FetchOutcome.DEFERRED for c in (ErrorClass.DEFERRED, ErrorClass.RETRY_AFTER, ErrorClass.CRAWL_DELAY,
                                          ErrorClass.HOST_ERRORS, ErrorClass.ROBOTS_UNAVAILABLE)},
    **{c: FetchOutcome.GONE for c in (ErrorClass.SSRF_BLOCKED, ErrorClass.BAD_SCHEME, ErrorClass.BAD_REDIRECT,
                                      ErrorClass.REDIRECT_LOOP, ErrorClass.TOO_MANY_REDIRECTS,
                                      ErrorClass.BAD_ENCODING)},
}
BY_STATUS = (None, ErrorClass.HTTP_ERROR, ErrorClass.TOO_LARGE)
# A batch slot skipped by the rules the fetch met (politeness, robots.txt): no request went out. A URL whose origin's
# robots.txt did not answer took its slot for nothing, and counts as a try.
SKIPPED_SLOT = tuple(c for c, o in OUTCOME.items() if o in NOT_ASKED and c != ErrorClass.ROBOTS_UNAVAILABLE)


def sql_macros() -> list[str]:
    """``error_<name>()`` for each class, and ``error_skipped_slot(error_class)``."""
    return [*(f"CREATE OR REPLACE MACRO error_{c.name.lower()}() AS '{c}'" for c in ErrorClass),
            f"CREATE OR REPLACE MACRO error_skipped_slot(error_class) AS error_class IN {sql_list(SKIPPED_SLOT)}"]
