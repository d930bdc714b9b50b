"""The DuckDB crawl database: connections, migrations, and the SQL files (the project's root folder ``sql/``,
installed as the package ``crawlcycle.sql``).

Only one process may have the file open at a time (readers included), so every caller opens it
through :func:`connect`, briefly, and Airflow runs all such tasks in a one-slot pool.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from crawlcycle.contracts import cycles, fetch_errors, url_states
from crawlcycle.settings import Settings, SettingsError

# A folder on disk: the package is installed unzipped (editable or not), so Path operations (glob) work on it.
SQL_DIR = Path(str(resources.files("crawlcycle.sql")))
_PARAM = re.compile(r"\$([a-z_][a-z0-9_]*)")


class DatabaseOpenError(SettingsError):
    """The crawl database cannot be opened; the message is one line naming the file and the reason."""


def _open_problem(path: Path, error: duckdb.IOException) -> str:
    """Why DuckDB could not open ``path``, in words (DuckDB's own message, told apart by its text)."""
    detail = str(error).splitlines()[0].removeprefix("IO Error: ")
    if "not a valid DuckDB database" in detail:
        return f"{path} is not a DuckDB database (move it away or point db_path elsewhere)"
    if "Could not set lock" in detail:
        # DuckDB fails at once rather than wait: one process may have the file open, readers included.
        pid = re.search(r"\(PID (\d+)\)", detail)
        return f"{path} is in use by another process{f' (PID {pid[1]})' if pid else ''}; try again when it has finished"
    return f"{path} cannot be opened ({detail})"


RANK_DIGITS = 6  # significant digits an order compares a score or a priority at (the macro rank_key)


def sum_offset(seed: int) -> float:
    """Where perturbation ``seed`` moves the rounding grid of ``exact_sum`` (in nano-units, within half of one)."""
    return random.Random(seed).uniform(-0.5, 0.5)


_HELD: set[Path] = set()  # crawl databases a held_open() block keeps open in this process


@contextmanager
def connect(settings: Settings, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the crawl database with the configured resource limits; closed on exit."""
    path = Path(settings.db_path)
    # DuckDB lets a process connect to a database it holds open only with the configuration it holds it with.
    read_only = read_only and path.resolve() not in _HELD
    if read_only and not path.exists():  # before any folder is made: a reader leaves nothing behind
        raise DatabaseOpenError(f"setting db_path: {path} does not exist (run `crawlcycle init` first)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(settings.data_dir) / "duckdb-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(path), read_only=read_only, config={
            "memory_limit": settings.duckdb_memory_limit,
            "threads": settings.duckdb_threads,
            "temp_directory": str(tmp),
        })
    except duckdb.IOException as e:
        raise DatabaseOpenError(f"setting db_path: {_open_problem(path, e)}") from None
    con.execute("SET enable_progress_bar = false")  # its redraws would fill task logs and pipes
    if settings.perturb_seed:  # the macros exact_sum and perturbation read them (sql/views/functions.sql)
        con.execute(f"SET VARIABLE sum_offset = {sum_offset(settings.perturb_seed)!r}")
        con.execute(f"SET VARIABLE perturb_seed = {int(settings.perturb_seed)}")
    try:
        yield con
    finally:
        con.close()


@contextmanager
def held_open(settings: Settings) -> Iterator[None]:
    """The crawl database held open in this process while the block runs: every connect() inside shares the one
    DuckDB instance instead of building another (about 15 ms each, mostly DuckDB's catalog of built-in functions;
    a dozen times a cycle). Other processes cannot open the file meanwhile."""
    path = Path(settings.db_path).resolve()
    if path in _HELD:
        yield
        return
    with connect(settings):
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)


_OPEN: set[int] = set()  # connections (by id) inside a transaction() block


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One transaction around the block: rolled back if it raises. Large writes belong in one: an UPDATE of
    millions of rows committed on its own took a hundred times as long as inside a transaction. Inside another
    transaction() block of the same connection it joins that one (DuckDB has no nested transactions): a stage
    runs whole in one, so that a process killed half-way leaves nothing of it for the retry to read."""
    if id(con) in _OPEN:
        yield
        return
    con.execute("BEGIN")
    _OPEN.add(id(con))
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        _OPEN.discard(id(con))
    con.execute("COMMIT")


@cache
def statements(name: str) -> tuple[str, ...]:
    """The statements of ``sql/<name>.sql``."""
    text = (SQL_DIR / f"{name}.sql").read_text()
    # Statements end with ';' at the end of a line; SQL files keep that convention.
    parts = re.split(r";[ \t]*(?:--[^\n]*)?\n", text + "\n")
    return tuple(p.strip() for p in parts if _strip_comments(p).strip())


@cache
def inputs(name: str) -> tuple[str, ...]:
    """The staged inputs ``sql/<name>.sql`` declares on its ``-- inputs:`` line: frames the caller registers, or temp
    tables an earlier file made (``s_`` names), which must exist when it runs."""
    lines = (SQL_DIR / f"{name}.sql").read_text().splitlines()
    return tuple(n for line in lines if line.startswith("-- inputs:")
                 for n in re.split(r"[,\s]+", line.removeprefix("-- inputs:")) if n)


def check_inputs(con: duckdb.DuckDBPyConnection, name: str) -> None:
    if not inputs(name):
        return
    staged = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE temporary UNION ALL "
                                        "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    missing = [n for n in inputs(name) if n not in staged]
    if missing:
        raise RuntimeError(f"sql/{name}.sql: inputs not staged: {', '.join(missing)}")


def _strip_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def execute(con: duckdb.DuckDBPyConnection, stmt: str, **params: Any) -> duckdb.DuckDBPyConnection:
    """Execute one statement, binding only the named ``$params`` it uses (DuckDB rejects extras)."""
    used = {k: params[k] for k in _PARAM.findall(_strip_comments(stmt)) if k in params}
    return con.execute(stmt, used or None)


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> Any:
    """First value of a one-row query, or None; fetches the whole result (DuckDB streams results and
    a half-read one blocks the connection)."""
    rows = con.execute(sql, params).fetchall()
    return rows[0][0] if rows else None


@contextmanager
def staged(con: duckdb.DuckDBPyConnection, **frames: Any) -> Iterator[None]:
    """Each frame registered under its name (``s_*``) while the block runs, for the SQL files that declare it on
    their ``-- inputs:`` line (``run_sql``, ``query`` and ``fetch_rows`` check that they are there)."""
    for name, frame in frames.items():
        con.register(name, frame)
    try:
        yield
    except BaseException:
        # A failed statement aborts the open transaction, which then refuses to unregister: the first error is the
        # one to report (disk full, a damaged file), and the connection's frames go when it closes.
        for name in frames:
            with suppress(duckdb.Error):
                con.unregister(name)
        raise
    for name in frames:
        con.unregister(name)


def run_sql(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> None:
    """Run every statement of ``sql/<name>.sql``."""
    check_inputs(con, name)
    for stmt in statements(name):
        execute(con, stmt, **params)


def query(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> pl.DataFrame:
    """Result of the single statement in ``sql/<name>.sql`` as a polars frame."""
    check_inputs(con, name)
    (stmt,) = statements(name)
    used = {k: params[k] for k in _PARAM.findall(_strip_comments(stmt)) if k in params}
    return con.sql(stmt, params=used or None).pl()


def fetch_rows(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[tuple]:
    """Rows of the single statement in ``sql/<name>.sql`` as tuples."""
    check_inputs(con, name)
    (stmt,) = statements(name)
    return execute(con, stmt, **params).fetchall()


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending ``sql/migrations/NNN_*.sql`` in order, then (re)create the macros of the URL state model
    (``contracts.url_states``) and the views."""
    run_sql(con, "migrations/schema_migrations")
    done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for path in sorted((SQL_DIR / "migrations").glob("[0-9][0-9][0-9]_*.sql")):
        version = int(path.name[:3])
        if version in done:
            continue
        with transaction(con):
            run_sql(con, f"migrations/{path.stem}")
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, path.stem])
        applied.append(path.stem)
    for macro in (*url_states.sql_macros(), *fetch_errors.sql_macros(), *cycles.sql_macros()):  # the views read them
        con.execute(macro)
    # x to RANK_DIGITS significant digits, what a cut of a ranking compares: values a last digit apart (a sum's
    # rounding, noise) tie there, and their stable tie-break (URL, discovery order) decides, not the last digit
    con.execute("CREATE OR REPLACE MACRO rank_key(x) AS CASE WHEN x = 0 OR NOT isfinite(x) THEN x "
                f"ELSE round(x, {RANK_DIGITS} - CAST(ceil(log10(abs(x))) AS INTEGER)) END")
    for path in sorted((SQL_DIR / "views").glob("*.sql")):
        run_sql(con, f"views/{path.stem}")
    return applied
