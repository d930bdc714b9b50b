"""Rows of the fetch log (``shard_files.FETCH_LOG``): what became of each batch URL, and the URL state it is left
in (``outcome``, one of ``shard_files.OUTCOMES``)."""

from __future__ import annotations

import re

from crawlcycle.contracts import shard_files
from crawlcycle.fetch.redirects import NOT_FOLLOWED, Chain

# Error classes that decide the outcome on their own; ``http_error`` (4xx/5xx) and ``too_large`` (body
# truncated, still fetched) leave it to the status.
_ERROR_OUTCOME = {
    "timeout": "retry_pending", "dns": "retry_pending", "connection": "retry_pending", "tls": "retry_pending",
    "robots_disallowed": "disallowed",
    "deferred": "deferred",            # fetch_time_limit reached first
    "retry_after": "deferred",         # host backed off by Retry-After beyond max_delay
    "crawl_delay": "deferred",         # origin asks for a Crawl-delay beyond max_delay
    "host_errors": "deferred",         # host_error_limit consecutive errors
    # robots.txt 5xx or unreachable: nothing of its origin was asked; the origin's back-off (origin_tries) decides
    # when its URLs take batch slots again, and they keep their attempts
    "robots_unavailable": "deferred",
    "ssrf_blocked": "gone", "bad_scheme": "gone", "bad_redirect": "gone", "redirect_loop": "gone",
    "too_many_redirects": "gone", "bad_encoding": "gone",
}
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+_-]*/[a-z0-9][a-z0-9.+_-]*")


def outcome_of(status: int | None, error_class: str | None) -> str:
    """The URL state after a fetch that ended with ``status`` and ``error_class``."""
    if error_class in _ERROR_OUTCOME:
        return _ERROR_OUTCOME[error_class]
    if status is None or 200 <= status < 300:
        return "fetched"
    if status in (301, 308):
        return "redirected_permanent"
    if status in (302, 303, 307):
        return "redirected_temporary"
    return "retry_pending" if status == 429 or status >= 500 else "gone"


def media_type(value: str | None) -> str | None:
    """``type/subtype`` of a Content-Type header, lower-case; None if absent or malformed."""
    mt = (value or "").split(";", 1)[0].strip().lower()
    return mt if _MEDIA_TYPE.fullmatch(mt) else None


def new_row(url: str, host: str, **values: object) -> dict:
    """A fetch-log row of ``url``, nothing known yet but ``values``."""
    return dict.fromkeys(shard_files.schema(shard_files.FETCH_LOG).names) | {
        "url": url, "host": host, "redirects": [], "bytes": 0, "truncated": False, **values}


def finish(row: dict) -> dict:
    """Complete ``row`` once the fetch of its URL ended: its time taken and outcome."""
    if row["started_at"] is not None:
        row["elapsed_ms"] = (row["finished_at"] - row["started_at"]) * 1000.0
    row["outcome"] = outcome_of(row["status"], row["error_class"])
    return row


def page_row(url: str, host: str, chain: Chain, blocked: bool) -> dict:
    """The row of ``url``, fetched as ``chain``. A redirect is the URL's answer (its target a URL of its own) when the
    chain did not follow it: then ``blocked`` says the SSRF guard refuses the target."""
    row = new_row(url, host, redirects=list(chain.targets), final_url=chain.final_url)
    contacted = [ex for ex in chain.exchanges if ex.contacted]
    if contacted:
        row.update(started_at=contacted[0].started, finished_at=contacted[-1].finished)
    answered = [ex for ex in chain.exchanges if not ex.error]
    if answered:
        row["status"] = answered[-1].status
    if chain.end is None:
        answer = chain.exchanges[-1]
        failed = answer.status >= 300  # type: ignore[operator]
        row.update(bytes=len(answer.body), truncated=answer.truncated,
                   content_type=media_type(answer.headers.get("Content-Type")),
                   error_class="http_error" if failed else "too_large" if answer.truncated else None)
    elif chain.end == NOT_FOLLOWED:
        row["error_class"] = "ssrf_blocked" if blocked else None
    else:
        row["error_class"] = chain.end
    row = finish(row)
    if row["outcome"] == "fetched" and row["redirects"]:
        # The content lives at the target, a URL of its own; this URL's state is its redirect.
        row["outcome"] = outcome_of(answered[0].status, None)
    return row
