"""A batch is named by two cycles: the cycle whose scores chose it (its score cycle) and the next, which fetches it
(its fetch cycle). :func:`batch_cycles` is the one conversion between them, and so between a cycle and the one
before or after it. SQL reads the same, and a cycle's status, through the macros of :func:`sql_macros`, which
``db.migrate`` creates.

Standard library only, as the other contracts.
"""

from __future__ import annotations

from enum import StrEnum

from crawlcycle.contracts.url_states import sql_constants


class CycleStatus(StrEnum):
    """A cycle's own status (``cycles.status``)."""

    RUNNING = "running"  # begun, not closed
    DONE = "done"        # its close task ran
    FAILED = "failed"    # its begin stopped on bad input (cycles.failure says which); a rerun opens it again


def batch_cycles(*, score: int | None = None, fetch: int | None = None) -> tuple[int, int]:
    """(score cycle, fetch cycle) of the batch named by either one."""
    if (score is None) == (fetch is None):
        raise ValueError("batch_cycles takes the score cycle or the fetch cycle of a batch, one of them")
    return (score, score + 1) if fetch is None else (fetch - 1, fetch)


def sql_macros() -> list[str]:
    """DuckDB macros of the same conversion, ``fetch_cycle_of(score_cycle)`` and ``score_cycle_of(fetch_cycle)``, and
    of the statuses (``cycle_running()``, ``cycle_done()``)."""
    return [*sql_constants(CycleStatus, "cycle"),
            "CREATE OR REPLACE MACRO fetch_cycle_of(score_cycle) AS score_cycle + 1",
            "CREATE OR REPLACE MACRO score_cycle_of(fetch_cycle) AS fetch_cycle - 1"]
