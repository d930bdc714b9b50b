"""Ordering policies: the priority of every eligible frontier URL, written to ``frontier_scores``.

Each policy is a SQL file under ``sql/policies/`` selecting (url, priority, parts) from the temp
table ``eligible``; a higher priority is fetched sooner. A policy that needs more than SQL stages its
inputs first (``STAGE``) and passes its parameters on.
"""

from __future__ import annotations

import duckdb

from crawlcycle.db import SQL_DIR, execute, run_sql, scalar, statements
from crawlcycle.ordering import hybrid, ml, opic, query_overlap, random_walk
from crawlcycle.settings import Settings

STAGE = {"hybrid": hybrid.stage_hybrid, "opic": opic.stage_opic, "rw": random_walk.stage_rw,
         "rw_eg": random_walk.stage_rw_eg, "q_overlap": query_overlap.stage_q_overlap,
         "q_hybrid": query_overlap.stage_q_hybrid, "ml": ml.stage_ml}


def available() -> list[str]:
    return sorted(p.stem for p in (SQL_DIR / "policies").glob("*.sql"))


def score_frontier(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace the scores of cycle ``cycle`` (which choose batch ``cycle + 1``); return URLs scored."""
    if settings.policy not in available():
        raise ValueError(f"policy {settings.policy!r} has no SQL in sql/policies/")
    run_sql(con, "stages/eligible_frontier", next_cycle=cycle + 1)
    params = STAGE[settings.policy](con, settings, cycle) if settings.policy in STAGE else {}
    con.execute("DELETE FROM frontier_scores WHERE cycle = ?", [cycle])
    (select,) = statements(f"policies/{settings.policy}")
    execute(con, f"INSERT INTO frontier_scores SELECT $cycle, url, priority, parts FROM ({select})",
            cycle=cycle, seed=settings.random_seed, **params)
    return scalar(con, "SELECT count(*) FROM frontier_scores WHERE cycle = ?", [cycle])
