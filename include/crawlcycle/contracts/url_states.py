"""The URL state model: the state of a frontier row, what one fetch of a batch URL gave, what a re-fetch of a stored
page found, and the transitions between them, in one place (as Nutch's CrawlDbReducer and FetchSchedule are).

A batch URL's fetch ends in a ``FetchOutcome`` (``fetch_log.outcome``); update turns it into the URL's next
``UrlState`` (``frontier.status``) by :data:`AFTER_FETCH` for a new URL and :data:`AFTER_REFRESH` for a stored page
fetched again, whose fetch is also a check (``page_checks.outcome``, a ``CheckOutcome``). A fetched page due for a
refresh stays ``fetched``: "due" is the refresh policy's reading of its checks, not a state.

SQL never spells these values or lists: :func:`sql_macros` writes them as DuckDB macros (``state_fetched()``,
``outcome_deferred()``, ``check_changed()``, ``origin_ok()``, the lists and the transitions), which ``db.migrate``
creates with the other functions of the database (so the duckdb CLI has them too). docs/reference/tables.md, "URL
states", describes each state (``tests/test_url_states.py`` holds the table, the macros and every SQL file to these
enums).

Standard library only, as every module of ``contracts``.
"""

from __future__ import annotations

from enum import StrEnum


class UrlState(StrEnum):
    """The state of a frontier URL (``frontier.status``)."""

    UNFETCHED = "unfetched"
    FETCHED = "fetched"
    REDIRECTED_PERMANENT = "redirected_permanent"
    REDIRECTED_TEMPORARY = "redirected_temporary"
    GONE = "gone"
    RETRY_PENDING = "retry_pending"
    DEFERRED = "deferred"
    DISALLOWED = "disallowed"
    DUPLICATE = "duplicate"


class FetchOutcome(StrEnum):
    """What one fetch of a batch URL gave (``fetch_log.outcome``)."""

    FETCHED = "fetched"                            # a 2xx answer with its body
    NOT_MODIFIED = "not_modified"                  # 304 to a conditional request
    REDIRECTED_PERMANENT = "redirected_permanent"  # 301, 308 (to a target not followed now, or followed: moved)
    REDIRECTED_TEMPORARY = "redirected_temporary"  # 302, 303, 307
    GONE = "gone"                                  # 404, 410, another 4xx, or an answer that can never be a page
    RETRY_PENDING = "retry_pending"                # a transient failure: timeout, connection, DNS, TLS, 5xx, 429
    DEFERRED = "deferred"                          # not asked: politeness, a failing host, the time limit
    DISALLOWED = "disallowed"                      # robots.txt disallows it


class OriginState(StrEnum):
    """Whether an origin's URLs take batch slots (``origin_tries.state``, ``v_origins``), from its failures in a row."""

    OK = "ok"            # its latest try answered
    BACKOFF = "backoff"  # held out until origin_retry_cycles * 2^(failures - 1) cycles after its latest try
    PARKED = "parked"    # origin_park_after failures or more: tried every origin_park_cycles cycles


class CheckOutcome(StrEnum):
    """What a re-fetch of a stored page found (``page_checks.outcome``)."""

    NOT_MODIFIED = "not_modified"  # 304: the stored copy is current
    UNCHANGED = "unchanged"        # 2xx with the stored main-text signature (pages.content_hash)
    CHANGED = "changed"            # 2xx with another signature: the new copy replaces the stored one
    GONE = "gone"                  # gone (404, 410, ...): the page leaves pages and the index
    MOVED = "moved"                # now redirects: the page leaves pages and the index, its target is a URL of its own
    FAILED = "failed"              # not answered (transient failure, not asked): the stored copy stays


REDIRECTED = (UrlState.REDIRECTED_PERMANENT, UrlState.REDIRECTED_TEMPORARY)
NOT_ASKED = (FetchOutcome.DEFERRED, FetchOutcome.DISALLOWED)  # the fetch sent no request for the URL
# Still to fetch: eligible for a batch slot, the waiting ones from frontier.retry_after_cycle on.
TO_FETCH = (UrlState.UNFETCHED, UrlState.RETRY_PENDING, UrlState.DEFERRED)
# Cycles a new URL waits after a fetch that left it to fetch: 2^(failures before) after a transient failure, one
# after a deferral.
WAITS = {FetchOutcome.RETRY_PENDING: "pow(2, attempts)", FetchOutcome.DEFERRED: "1"}

# A new URL's state after its fetch. A transient failure counts as an attempt; the url_attempts-th makes it gone.
AFTER_FETCH: dict[FetchOutcome, UrlState] = {
    **{o: UrlState(o) for o in FetchOutcome if o != FetchOutcome.NOT_MODIFIED},
    FetchOutcome.NOT_MODIFIED: UrlState.FETCHED,
}
# A stored page fetched again: the check it makes, and its state after it. A fetch that gave no answer keeps the
# stored copy and the state (the refresh policy asks again), and counts no attempt.
CHECK: dict[FetchOutcome, CheckOutcome | None] = {
    FetchOutcome.FETCHED: None,  # UNCHANGED or CHANGED, by the main-text signature
    FetchOutcome.NOT_MODIFIED: CheckOutcome.NOT_MODIFIED,
    FetchOutcome.REDIRECTED_PERMANENT: CheckOutcome.MOVED,
    FetchOutcome.REDIRECTED_TEMPORARY: CheckOutcome.MOVED,
    FetchOutcome.GONE: CheckOutcome.GONE,
    FetchOutcome.RETRY_PENDING: CheckOutcome.FAILED,
    FetchOutcome.DEFERRED: CheckOutcome.FAILED,
    FetchOutcome.DISALLOWED: CheckOutcome.FAILED,
}
AFTER_REFRESH: dict[FetchOutcome, UrlState] = {
    o: UrlState.FETCHED if CHECK[o] in (None, CheckOutcome.NOT_MODIFIED, CheckOutcome.FAILED) else AFTER_FETCH[o]
    for o in FetchOutcome
}
# Whether a check found the live page other than the stored copy (None: it could not tell); the change history the
# change-rate estimate reads.
FOUND_CHANGE: dict[CheckOutcome, bool | None] = {
    CheckOutcome.NOT_MODIFIED: False, CheckOutcome.UNCHANGED: False, CheckOutcome.CHANGED: True,
    CheckOutcome.GONE: True, CheckOutcome.MOVED: True, CheckOutcome.FAILED: None,
}
LEAVES_INDEX = (CheckOutcome.GONE, CheckOutcome.MOVED)


def sql_list(values: tuple[StrEnum, ...] | list[StrEnum]) -> str:
    """``('a', 'b')``: values as a SQL list."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def sql_constants(enum: type[StrEnum], prefix: str) -> list[str]:
    """A macro per value of ``enum``, ``<prefix>_<name>()``: how SQL spells the value (no SQL file spells one as a
    literal, ``tests/test_url_states.py``)."""
    return [f"CREATE OR REPLACE MACRO {prefix}_{v.name.lower()}() AS '{v}'" for v in enum]


def _case(key: str, table: dict, quote: bool = True) -> str:
    """``CASE key WHEN 'k' THEN 'v' ... END`` of a table (a None value is NULL)."""
    def value(v: object) -> str:
        return "NULL" if v is None else f"'{v}'" if quote else str(v).lower()
    return f"CASE {key} " + " ".join(f"WHEN '{k}' THEN {value(v)}" for k, v in table.items()) + " END"


def sql_macros() -> list[str]:
    """The DuckDB macros of the state model, one statement each: every list and transition above, as SQL reads them.
    ``refresh`` says the batch URL was a stored page fetched again (``batches.kind``)."""
    retry = FetchOutcome.RETRY_PENDING
    waits = " ".join(f"WHEN '{o}' THEN cycle + CAST({w} AS INTEGER)" for o, w in WAITS.items())
    return [
        *sql_constants(UrlState, "state"), *sql_constants(FetchOutcome, "outcome"),
        *sql_constants(CheckOutcome, "check"), *sql_constants(OriginState, "origin"),
        f"CREATE OR REPLACE MACRO url_state_to_fetch(state) AS state IN {sql_list(TO_FETCH)}",
        "CREATE OR REPLACE MACRO url_state_due(state, retry_after_cycle, next_cycle) AS "
        "url_state_to_fetch(state) AND coalesce(retry_after_cycle, 0) <= next_cycle",
        f"CREATE OR REPLACE MACRO url_redirected(state) AS state IN {sql_list(REDIRECTED)}",
        f"CREATE OR REPLACE MACRO url_outcome_asked(outcome) AS outcome NOT IN {sql_list(NOT_ASKED)}",
        f"CREATE OR REPLACE MACRO url_attempt_failed(outcome, refresh) AS NOT refresh AND outcome = '{retry}'",
        "CREATE OR REPLACE MACRO url_state_after(outcome, attempts, url_attempts, refresh) AS CASE "
        f"WHEN refresh THEN {_case('outcome', AFTER_REFRESH)} "
        f"WHEN outcome = '{retry}' AND attempts + 1 >= url_attempts THEN '{UrlState.GONE}' "
        f"ELSE {_case('outcome', AFTER_FETCH)} END",
        "CREATE OR REPLACE MACRO url_retry_after(outcome, attempts, url_attempts, cycle, refresh) AS CASE "
        f"WHEN refresh OR (outcome = '{retry}' AND attempts + 1 >= url_attempts) THEN NULL "
        f"ELSE CASE outcome {waits} END END",
        # same_text: whether the answer's main-text signature is the stored one (NULL: no copy to compare)
        "CREATE OR REPLACE MACRO check_outcome(outcome, same_text) AS CASE "
        f"WHEN outcome = '{FetchOutcome.FETCHED}' THEN CASE WHEN same_text THEN '{CheckOutcome.UNCHANGED}' "
        f"WHEN NOT same_text THEN '{CheckOutcome.CHANGED}' ELSE '{CheckOutcome.FAILED}' END "
        f"ELSE {_case('outcome', {o: c for o, c in CHECK.items() if c})} END",
        f"CREATE OR REPLACE MACRO check_found_change(outcome) AS {_case('outcome', FOUND_CHANGE, quote=False)}",
        f"CREATE OR REPLACE MACRO check_leaves_index(outcome) AS outcome IN {sql_list(LEAVES_INDEX)}",
    ]
