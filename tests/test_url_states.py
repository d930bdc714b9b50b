"""The URL state model is one contract (crawlcycle.contracts.url_states): the macros SQL reads say what its tables
say, no SQL file spells a state the enums lack, the reference page describes every state and check, and a fetch
error class the model does not know is an error, not a fetched page."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import duckdb
import pytest

from crawlcycle.contracts.url_states import (
    AFTER_FETCH,
    AFTER_REFRESH,
    CHECK,
    FOUND_CHANGE,
    LEAVES_INDEX,
    TO_FETCH,
    WAITS,
    CheckOutcome,
    FetchOutcome,
    UrlState,
    sql_macros,
)
from crawlcycle.db import SQL_DIR
from crawlcycle.fetch.fetch_log import UnknownErrorClass, outcome_of

NAMES = {*UrlState, *FetchOutcome, *CheckOutcome}
# The one other column of these names holding words: a cycle's own status (cycles.status).
CYCLE_STATES = {"running", "done"}
_COMPARED = re.compile(r"\b(?:status|outcome)\s*(?:=|<>|!=)\s*'([^']*)'|\b(?:status|outcome)\s+(?:NOT\s+)?IN\s*"
                       r"\(([^)]*)\)", re.IGNORECASE)
_LITERAL = re.compile(r"'([a-z]+(?:_[a-z]+)*)'")
README = Path(__file__).resolve().parents[1] / "docs" / "reference" / "tables.md"


def misspelled(sql: str) -> list[str]:
    """The literals of ``sql`` that are not a state or an outcome but stand where one does: compared with a status or
    outcome column, or spelled nearly like one (a typo)."""
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    compared = {lit for m in _COMPARED.finditer(code) for lit in
                ([m[1]] if m[1] is not None else _LITERAL.findall(m[2]))}
    near = {lit for lit in _LITERAL.findall(code) if difflib.get_close_matches(lit, NAMES, n=1, cutoff=0.9)}
    return sorted((compared | near) - NAMES - CYCLE_STATES)


def test_no_sql_file_spells_a_state_the_enums_lack() -> None:
    files = sorted(SQL_DIR.rglob("*.sql"))
    assert len(files) > 100
    assert {str(p.relative_to(SQL_DIR)): bad for p in files if (bad := misspelled(p.read_text()))} == {}
    # what the check catches
    assert misspelled("UPDATE frontier SET status = 'fetchd' WHERE url IN (SELECT url FROM s)") == ["fetchd"]
    assert misspelled("SELECT * FROM fetch_log WHERE outcome NOT IN ('deferred', 'lost')") == ["lost"]
    assert misspelled("SELECT 'redirect', 'retry_pendng' -- 'gone_away' is a comment") == ["retry_pendng"]


def _run(con: duckdb.DuckDBPyConnection, sql: str, *params: object) -> object:
    return con.execute(sql, list(params)).fetchone()[0]


def test_the_macros_say_what_the_transition_tables_say() -> None:
    con = duckdb.connect()
    for macro in sql_macros():
        con.execute(macro)
    limit = 3
    for outcome in FetchOutcome:
        for attempts in range(limit):
            last = outcome == FetchOutcome.RETRY_PENDING and attempts + 1 >= limit
            new = UrlState.GONE if last else AFTER_FETCH[outcome]
            assert _run(con, "SELECT url_state_after(?, ?, ?, false)", outcome, attempts, limit) == new
            refreshed = AFTER_REFRESH[outcome]
            assert _run(con, "SELECT url_state_after(?, ?, ?, true)", outcome, attempts, limit) == refreshed
            wait = None if last or outcome not in WAITS else 9 + (2 ** attempts if WAITS[outcome] != "1" else 1)
            assert _run(con, "SELECT url_retry_after(?, ?, ?, 9, false)", outcome, attempts, limit) == wait
            assert _run(con, "SELECT url_retry_after(?, ?, ?, 9, true)", outcome, attempts, limit) is None
        assert _run(con, "SELECT url_attempt_failed(?, false)", outcome) == (outcome == FetchOutcome.RETRY_PENDING)
        assert _run(con, "SELECT url_attempt_failed(?, true)", outcome) is False
        for same in (True, False, None):
            check = CHECK[outcome] or {True: CheckOutcome.UNCHANGED, False: CheckOutcome.CHANGED,
                                       None: CheckOutcome.FAILED}[same]
            assert _run(con, "SELECT check_outcome(?, ?)", outcome, same) == check
    for check in CheckOutcome:
        assert _run(con, "SELECT check_found_change(?)", check) is FOUND_CHANGE[check]
        assert _run(con, "SELECT check_leaves_index(?)", check) == (check in LEAVES_INDEX)
    for state in UrlState:
        assert _run(con, "SELECT url_state_to_fetch(?)", state) == (state in TO_FETCH)
        assert _run(con, "SELECT url_redirected(?)", state) == state.startswith("redirected_")
    assert [o for o in FetchOutcome if not _run(con, "SELECT url_outcome_asked(?)", o)] == [
        FetchOutcome.DEFERRED, FetchOutcome.DISALLOWED]
    # a refresh that fails keeps its stored copy, and a stored page stays fetched unless gone or redirecting
    assert {o for o, s in AFTER_REFRESH.items() if s != UrlState.FETCHED} == {
        FetchOutcome.GONE, FetchOutcome.REDIRECTED_PERMANENT, FetchOutcome.REDIRECTED_TEMPORARY}


def _documented(heading: str) -> list[str]:
    """The names in the first column of the table under ``## heading`` of the tables reference."""
    section = README.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])]


def test_the_reference_describes_every_state_outcome_and_check() -> None:
    assert _documented("URL states") == list(UrlState)
    assert _documented("Fetch outcomes") == list(FetchOutcome)
    assert _documented("Checks of stored pages") == list(CheckOutcome)


def test_an_unknown_fetch_error_class_is_an_error() -> None:
    assert outcome_of(None, "timeout") == FetchOutcome.RETRY_PENDING
    assert outcome_of(304, None, not_modified=True) == FetchOutcome.NOT_MODIFIED
    assert outcome_of(304, "http_error") == FetchOutcome.GONE  # a 304 nobody asked for
    with pytest.raises(UnknownErrorClass, match="'timed_out' has no outcome"):
        outcome_of(None, "timed_out")
