"""Rows of the fetch log (``shard_files.FETCH_LOG``): what became of each batch URL (``outcome``, a
``url_states.FetchOutcome``), and the validators and payload digest of its answer, which the page keeps for its next
fetch."""

from __future__ import annotations

import re

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.fetch_errors import BY_STATUS, OUTCOME, ErrorClass
from crawlcycle.contracts.url_states import FetchOutcome
from crawlcycle.fetch.redirects import Chain

_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9.+_-]*/[a-z0-9][a-z0-9.+_-]*")


class UnknownErrorClass(ValueError):
    """The fetch path wrote an error class the outcome table does not know."""


def outcome_of(status: int | None, error_class: str | None, not_modified: bool = False) -> FetchOutcome:
    """The outcome of a fetch that ended with ``status`` and ``error_class``; ``not_modified``: a 304 answered a
    conditional request."""
    if error_class in OUTCOME:
        return OUTCOME[ErrorClass(error_class)]
    if error_class not in BY_STATUS:
        raise UnknownErrorClass(f"fetch error class {error_class!r} has no outcome (crawlcycle.contracts.fetch_errors)")
    if not_modified:
        return FetchOutcome.NOT_MODIFIED
    if status is None or 200 <= status < 300:
        return FetchOutcome.FETCHED
    if status in (301, 308):
        return FetchOutcome.REDIRECTED_PERMANENT
    if status in (302, 303, 307):
        return FetchOutcome.REDIRECTED_TEMPORARY
    return FetchOutcome.RETRY_PENDING if status == 429 or status >= 500 else FetchOutcome.GONE


def media_type(value: str | None) -> str | None:
    """``type/subtype`` of a Content-Type header, lower-case; None if absent or malformed."""
    mt = (value or "").split(";", 1)[0].strip().lower()
    return mt if _MEDIA_TYPE.fullmatch(mt) else None


def new_row(url: str, host: str, **values: object) -> dict:
    """A fetch-log row of ``url``, nothing known yet but ``values``."""
    return dict.fromkeys(shard_files.schema(shard_files.FETCH_LOG).names) | {
        "url": url, "host": host, "redirects": [], "bytes": 0, "truncated": False, **values}


def finish(row: dict, not_modified: bool = False) -> dict:
    """Complete ``row`` once the fetch of its URL ended: its time taken and outcome."""
    if row["started_at"] is not None:
        row["elapsed_ms"] = (row["finished_at"] - row["started_at"]) * 1000.0
    row["outcome"] = outcome_of(row["status"], row["error_class"], not_modified)
    return row


def page_row(url: str, host: str, chain: Chain, blocked: bool) -> dict:
    """The row of ``url``, fetched as ``chain``. A redirect is the URL's answer (its target a URL of its own) when the
    chain did not follow it: then ``blocked`` says the SSRF guard refuses the target. A 304 to the conditional request
    of a page fetched again is ``not_modified``; the validators of a 2xx or 304 answer and the payload digest of a 2xx
    body are the row's."""
    row = new_row(url, host, redirects=list(chain.targets), final_url=chain.final_url)
    contacted = [ex for ex in chain.exchanges if ex.contacted]
    if contacted:
        row.update(started_at=contacted[0].started, finished_at=contacted[-1].finished)
    answered = [ex for ex in chain.exchanges if not ex.error]
    if answered:
        row["status"] = answered[-1].status
    not_modified = False
    if chain.unfollowed:
        row["error_class"] = ErrorClass.SSRF_BLOCKED if blocked else None
    elif chain.end is None:
        answer = chain.exchanges[-1]
        not_modified = answer.not_modified
        failed = answer.status >= 300 and not not_modified  # type: ignore[operator]
        row.update(bytes=len(answer.body), truncated=answer.truncated,
                   content_type=media_type(answer.headers.get("Content-Type")),
                   error_class=ErrorClass.HTTP_ERROR if failed else ErrorClass.TOO_LARGE if answer.truncated else None)
        if not failed:
            row.update(etag=answer.validator("ETag"), last_modified=answer.validator("Last-Modified"),
                       payload_digest=None if not_modified else answer.payload_digest)
    else:
        row["error_class"] = chain.end
    row = finish(row, not_modified)
    if row["outcome"] == FetchOutcome.FETCHED and row["redirects"]:
        # The content lives at the target, a URL of its own; this URL's state is its redirect.
        row["outcome"] = outcome_of(answered[0].status, None)
    return row
