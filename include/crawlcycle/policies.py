"""Ordering policies: the priority of every eligible frontier URL, written to ``frontier_scores``.

Each policy is a SQL file under ``sql/policies/`` selecting (url, priority, parts) from the temp
view ``eligible``; a higher priority is fetched sooner.
"""

from __future__ import annotations

import duckdb

from crawlcycle.db import SQL_DIR, execute, run_sql, scalar, statements
from crawlcycle.settings import Settings


def available() -> list[str]:
    return sorted(p.stem for p in (SQL_DIR / "policies").glob("*.sql"))


def score_frontier(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace the scores of cycle ``cycle`` (which choose batch ``cycle + 1``); return URLs scored."""
    if settings.policy not in available():
        raise ValueError(f"policy {settings.policy!r} has no SQL in sql/policies/")
    run_sql(con, "stages/eligible_frontier", next_cycle=cycle + 1)
    con.execute("DELETE FROM frontier_scores WHERE cycle = ?", [cycle])
    (select,) = statements(f"policies/{settings.policy}")
    execute(con, f"INSERT INTO frontier_scores SELECT $cycle, url, priority, parts FROM ({select})",
            cycle=cycle, seed=settings.random_seed)
    return scalar(con, "SELECT count(*) FROM frontier_scores WHERE cycle = ?", [cycle])
