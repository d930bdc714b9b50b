"""Ordering policies at work: the priority of every eligible frontier URL, written to ``frontier_scores``, and the
policies' own state cleared when a cycle is rolled back. The entries are ``ordering.policies.REGISTRY``.

Each policy is a SQL file under ``sql/ordering/policies/`` selecting (url, priority, parts) from the temp
table ``eligible``; a higher priority is fetched sooner. A policy that needs more than SQL stages its
inputs first (its entry's ``stage``) and passes its parameters on.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import duckdb

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.contracts.policies import REGISTRY, Policy, policy
from crawlcycle.db import check_inputs, execute, run_sql, scalar, statements
from crawlcycle.ordering import refresh
from crawlcycle.settings import Settings

Stage = Callable[[duckdb.DuckDBPyConnection, Settings, int], dict[str, object]]


def stage_function(entry: Policy) -> Stage | None:
    """The entry's staging function, imported on first use (several import scikit-learn or SciPy)."""
    if not entry.stage:
        return None
    module, _, name = entry.stage.partition(":")
    return getattr(importlib.import_module(module), name)


def stage_eligible(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> None:
    """The temp table ``eligible``: frontier URLs that may enter the batch scored in cycle ``cycle`` (open, due, in
    scope)."""
    _, fetch_cycle = batch_cycles(score=cycle)
    run_sql(con, "ordering/registry/eligible_frontier", next_cycle=fetch_cycle, scope=settings.scope_rules())


def score_frontier(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace the scores of cycle ``cycle`` (``frontier_scores.score_cycle``: they choose the batch of the next
    cycle's fetch) and the refresh policy's (``refresh_scores``); return frontier URLs scored."""
    entry = policy(settings.policy)
    stage_eligible(con, settings, cycle)
    stage = stage_function(entry)
    params = stage(con, settings, cycle) if stage else {}
    con.execute("DELETE FROM frontier_scores WHERE score_cycle = ?", [cycle])
    check_inputs(con, entry.sql)
    (select,) = statements(entry.sql)
    execute(con, f"INSERT INTO frontier_scores (score_cycle, url, priority, parts) SELECT $cycle, url, priority, parts "
                 f"FROM ({select})",
            cycle=cycle, seed=settings.random_seed, **params)
    refresh.score_refresh(con, settings, cycle)
    return scalar(con, "SELECT count(*) FROM frontier_scores WHERE score_cycle = ?", [cycle])


def owned_tables() -> list[str]:
    """The tables of state the policies keep by cycle, each once."""
    return sorted({table for entry in REGISTRY for table in entry.owns})


def clear_cycle(con: duckdb.DuckDBPyConnection, cycle: int) -> None:
    """Delete cycle ``cycle``'s rows of every policy's own state, whichever policy ran it: part of the rollback
    that lets a re-run of the cycle replace its output exactly (``sql/pipeline/update/rollback_cycle.sql`` does the
    rest)."""
    for table in owned_tables():
        con.execute(f"DELETE FROM {table} WHERE cycle = ?", [cycle])
