"""The URL state model is one contract (crawlcycle.contracts.url_states): the macros SQL reads say what its tables
say, no SQL file spells a state, outcome, origin state, error class or cycle status (it reads their macros), the
reference page describes every state and check, and a fetch error class the model does not know is an error, not a
fetched page."""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

import duckdb
import pytest

from crawlcycle.contracts import cycles, fetch_errors
from crawlcycle.contracts.cycles import CycleStatus
from crawlcycle.contracts.fetch_errors import ErrorClass
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
    OriginState,
    UrlState,
    sql_macros,
)
from crawlcycle.db import SQL_DIR
from crawlcycle.fetch.fetch_log import UnknownErrorClass, outcome_of

ENUMS = (UrlState, FetchOutcome, CheckOutcome, OriginState, ErrorClass, CycleStatus)
VALUES = {str(v) for e in ENUMS for v in e}
_COMPARED = re.compile(r"\b(?:status|outcome|state|error_class|last_error)\s*(?:=|<>|!=)\s*'([^']*)'"
                       r"|\b(?:status|outcome|state|error_class|last_error)\s+(?:NOT\s+)?IN\s*\(([^)]*)\)",
                       re.IGNORECASE)
_LITERAL = re.compile(r"'([a-z]+(?:_[a-z]+)*)'")
_CONSTANT = re.compile(r"^CREATE OR REPLACE MACRO (\w+)\(\) AS '([^']*)'$")
README = Path(__file__).resolve().parents[1] / "docs" / "reference" / "tables.md"


def spelled(sql: str) -> list[str]:
    """The literals of ``sql`` that spell a value of the contracts' enums, or nearly one (a typo), or stand where one
    does (compared with a status, outcome, state or error class column): SQL reads each value through its macro."""
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    literals = set(_LITERAL.findall(code))
    compared = {lit for m in _COMPARED.finditer(code) for lit in
                ([m[1]] if m[1] is not None else _LITERAL.findall(m[2]))}
    near = {lit for lit in literals if difflib.get_close_matches(lit, VALUES, n=1, cutoff=0.9)}
    return sorted((literals & VALUES) | compared | near)


def test_every_value_has_its_macro_and_no_sql_file_spells_one() -> None:
    constants = [m.groups() for macro in (*sql_macros(), *fetch_errors.sql_macros(), *cycles.sql_macros())
                 if (m := _CONSTANT.match(macro))]
    assert len(constants) == sum(len(e) for e in ENUMS) and {v for _, v in constants} == VALUES
    files = [p for p in sorted(SQL_DIR.rglob("*.sql")) if "migrations" not in p.relative_to(SQL_DIR).parts]
    assert len(files) > 100
    assert {str(p.relative_to(SQL_DIR)): bad for p in files if (bad := spelled(p.read_text()))} == {}
    # what the check catches
    assert spelled("UPDATE frontier SET status = 'fetched' WHERE url IN (SELECT url FROM s)") == ["fetched"]
    assert spelled("UPDATE frontier SET status = 'fetchd' WHERE url IN (SELECT url FROM s)") == ["fetchd"]
    assert spelled("SELECT * FROM fetch_log WHERE outcome NOT IN ('deferred', 'lost')") == ["deferred", "lost"]
    assert spelled("SELECT origin FROM v_origins WHERE state <> 'ok' OR last_error = 'no_pages'") == [
        "no_pages", "ok"]
    assert spelled("SELECT 'redirect', 'retry_pendng' -- 'gone' is a comment") == ["retry_pendng"]
    assert spelled("SELECT url FROM frontier WHERE status = state_fetched() AND kind = 'page'") == []


# Words of other vocabularies that a value of the contracts spells too, where a module compares them: a column name,
# Airflow's own run and task states, a choice of the recompute setting.
OTHER_VOCABULARIES = {("evaluation/crawl_metrics.py", "fetched"), ("devtools/airflow_stack.py", "failed"),
                      ("devtools/soak_run.py", "failed"), ("models/score_model.py", "changed"),
                      ("airflow/instance_lock.py", "running")}  # Airflow's job states
_NAMED = re.compile(r"error|status|state|outcome|end|kind|reason|class", re.IGNORECASE)
_SQL = re.compile(r"\b(?:SELECT|UPDATE|WHERE|INSERT)\b")


def _direct(node: ast.AST | None) -> list[ast.AST]:
    """The constants an expression gives as they are (through conditionals and tuples)."""
    if isinstance(node, ast.IfExp):
        return _direct(node.body) + _direct(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [c for v in node.values for c in _direct(v)]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _direct(e)]
    return [node] if isinstance(node, ast.Constant) else []


def _name(target: ast.AST) -> str:
    """What an assignment's target is called: ``x``, ``a.x`` or ``row["x"]``."""
    if isinstance(target, ast.Subscript):
        return str(target.slice.value) if isinstance(target.slice, ast.Constant) else ""
    return getattr(target, "attr", getattr(target, "id", ""))


def python_spelled(source: str) -> list[str]:
    """The values of the contracts' enums a module spells as literals where one stands: compared, assigned to or
    passed as an error, status, state, outcome, kind or reason, returned, a dict's value, or inside its SQL."""
    found = []
    for node in ast.walk(ast.parse(source)):
        given: list[ast.AST] = []
        if isinstance(node, ast.Compare):
            given = [c for side in (node.left, *node.comparators) for c in _direct(side)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_NAMED.search(_name(t)) for t in targets):
                given = _direct(node.value)
        elif isinstance(node, ast.keyword) and node.arg and _NAMED.search(node.arg):
            given = _direct(node.value)
        elif isinstance(node, ast.Return):
            given = _direct(node.value)
        elif isinstance(node, ast.Dict):
            given = [c for v in node.values for c in _direct(v)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            found += [lit for lit in spelled(node.value) if lit in VALUES]
        found += [c.value for c in given if isinstance(c, ast.Constant) and c.value in VALUES]
    return sorted(found)


def test_no_module_spells_a_value_of_the_contracts() -> None:
    package = Path(__file__).resolve().parents[1]
    modules = [p for root in ("include/crawlcycle", "dags", "plugins") for p in sorted((package / root).rglob("*.py"))
               if "contracts" not in p.parts]
    assert len(modules) > 80
    found = {(str(p.relative_to(package / "include/crawlcycle")) if "include" in p.parts else p.name, v)
             for p in modules for v in python_spelled(p.read_text())}
    assert found == OTHER_VOCABULARIES
    # what the check catches
    assert python_spelled('row["error_class"] = "ssrf_blocked" if blocked else None') == ["ssrf_blocked"]
    assert python_spelled('if ex.error in ("timeout", "dns"):\n    pass') == ["dns", "timeout"]
    assert python_spelled('con.execute("SELECT 1 FROM cycles WHERE status <> \'done\'")') == ["done"]
    assert python_spelled('def f(): return None if ok else "robots_disallowed"') == ["robots_disallowed"]
    assert python_spelled('row = {"fetched": 1}; new_row(url, error_class=ErrorClass.DNS)') == []


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
    assert _documented("Error classes") == list(ErrorClass)
    assert _documented("Origin states") == list(OriginState)
    assert _documented("Cycle statuses") == list(CycleStatus)


def test_an_unknown_fetch_error_class_is_an_error() -> None:
    assert outcome_of(None, "timeout") == FetchOutcome.RETRY_PENDING
    assert outcome_of(304, None, not_modified=True) == FetchOutcome.NOT_MODIFIED
    assert outcome_of(304, "http_error") == FetchOutcome.GONE  # a 304 nobody asked for
    with pytest.raises(UnknownErrorClass, match="'timed_out' has no outcome"):
        outcome_of(None, "timed_out")
