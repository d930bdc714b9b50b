"""The interface between Python and SQL: each SQL file declares the staged inputs it reads (``-- inputs:``), and a
file run without one of them stops with its name, before DuckDB's own message about a missing table."""

from __future__ import annotations

import re

import duckdb
import polars as pl
import pytest

from crawlcycle.contracts import url_states
from crawlcycle.db import SQL_DIR, inputs, query, run_sql, staged


def read_inputs(text: str) -> list[str]:
    """The ``s_`` names a SQL text reads (after FROM, JOIN or USING) and does not create itself."""
    body = re.sub(r"'[^']*'", "''", "\n".join(line.split("--")[0] for line in text.splitlines()))
    read = set(re.findall(r"\b(?:FROM|JOIN|USING)\s+(s_[a-z0-9_]+)\b", body, re.I))
    made = set(re.findall(r"\b(?:TABLE|VIEW|MACRO)\s+(?:IF NOT EXISTS\s+)?(s_[a-z0-9_]+)", body, re.I))
    return sorted(read - made)


def test_every_sql_file_declares_the_staged_inputs_it_reads() -> None:
    files = sorted(SQL_DIR.rglob("*.sql"))
    wrong = {}
    for path in files:
        name = path.relative_to(SQL_DIR).with_suffix("").as_posix()
        if sorted(inputs(name)) != read_inputs(path.read_text()):
            wrong[name] = (sorted(inputs(name)), read_inputs(path.read_text()))
    assert len(files) > 100 and sum(bool(inputs(p.relative_to(SQL_DIR).with_suffix("").as_posix()))
                                    for p in files) > 30
    assert not wrong, wrong  # declared vs read


def test_a_file_run_without_an_input_names_it() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE frontier (url VARCHAR, status VARCHAR, status_cycle INTEGER)")
    for macro in url_states.sql_macros():  # the states the file writes
        con.execute(macro)
    with pytest.raises(RuntimeError,
                       match=r"^sql/pipeline/materialize/disallow_blocked\.sql: inputs not staged: s_blocked$"):
        run_sql(con, "pipeline/materialize/disallow_blocked", cycle=1)
    con.register("s_blocked", pl.DataFrame({"url": ["http://a.test/"]}))
    run_sql(con, "pipeline/materialize/disallow_blocked", cycle=1)  # staged: it runs
    with pytest.raises(RuntimeError, match="inputs not staged: s_shown"):
        query(con, "models/prestige/observed_impact", cycle=1)


def test_a_staged_frame_lives_for_its_block_and_a_failure_inside_keeps_its_own_error() -> None:
    con = duckdb.connect()
    with staged(con, s_rows=pl.DataFrame({"n": [1, 2]})):
        assert con.execute("SELECT sum(n) FROM s_rows").fetchall() == [(3,)]
    with pytest.raises(duckdb.CatalogException, match="s_rows"):
        con.execute("SELECT * FROM s_rows")
    # inside a transaction a failed statement aborts it; the unregister must not hide why
    con.execute("BEGIN")
    with pytest.raises(duckdb.ConversionException), staged(con, s_rows=pl.DataFrame({"n": [1]})):
        con.execute("SELECT 'x'::INTEGER FROM s_rows")
