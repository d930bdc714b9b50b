"""What the DAG files need from the package, kept light: the DAG parser imports it on every parse."""

from __future__ import annotations

import logging
import os
import socket
from datetime import date, timedelta
from typing import Any

from crawlcycle.ordering.policies import REGISTRY
from crawlcycle.pipeline.stage_order import GATE, STAGE_ORDER
from crawlcycle.settings import Settings, load_settings

DUCKDB_POOL = "crawl_duckdb"
# Names a Celery worker in task instances' hostname when several run on one machine (see worker_name).
WORKER_NAME_ENV = "CELERY_WORKER_NAME"
# The gate task ids and the gates each runs, in order: how `crawlcycle report` finds a gate task's own seconds
# (gate_<stage> in cycles.stage_seconds).
GATE_TASKS = {t.name: t.gates for t in STAGE_ORDER if t.kind == GATE}
# Each retry of a fetch shard waits this many times longer than the one before (up to max_retry_delay).
FETCH_BACKOFF = 2.0

log = logging.getLogger("crawlcycle")


def dag_settings() -> Settings:
    """Settings read at DAG parse time (schedule and start date); no I/O beyond the TOML file. The DAG
    fetches, so a user agent with a contact is required before it can be parsed at all."""
    return load_settings().require_user_agent()


def policy_doc() -> str:
    """The DAG's policy parameter in Markdown: what leaving it empty does, and a line per policy."""
    return "ordering policy for this run (empty: the policy setting)\n\n" + "\n".join(
        f"- `{p.name}`: {p.description}" for p in REGISTRY)


def default_args(settings: Settings) -> dict[str, Any]:
    """Arguments of every task: retries, a time limit, and a one-line log of why a task failed."""
    return {
        "retries": settings.task_retries,
        "retry_delay": timedelta(seconds=settings.retry_delay),
        "execution_timeout": timedelta(seconds=settings.task_timeout),
        "on_failure_callback": log_failure,
    }


def fetch_args(settings: Settings) -> dict[str, Any]:
    """Fetch shards meet flaky hosts and networks: more retries, each after a longer wait."""
    return {
        "retries": settings.fetch_retries,
        "retry_exponential_backoff": FETCH_BACKOFF,
        "max_retry_delay": timedelta(seconds=settings.max_retry_delay),
    }


def db_args(settings: Settings) -> dict[str, Any]:
    """Tasks that open the DuckDB file: one at a time, on one machine (the one-slot pool holds it under
    LocalExecutor, which ignores queues; the writer queue's single worker holds it under Celery)."""
    return {"pool": DUCKDB_POOL, "queue": settings.writer_queue}


def failure_line(context: dict[str, Any]) -> str:
    """One line naming the failed task instance and the cause."""
    ti = context["task_instance"]
    error = context.get("exception")
    shard = f"[{ti.map_index}]" if getattr(ti, "map_index", -1) >= 0 else ""
    if error is None:
        cause = "no exception (marked failed by Airflow)"
    else:
        first = next(iter(str(error).strip().splitlines()), "")
        cause = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return f"{ti.dag_id}.{ti.task_id}{shard} run {ti.run_id} try {ti.try_number} failed: {cause}"


def log_failure(context: dict[str, Any]) -> None:
    log.error(failure_line(context))


def worker_name() -> str:
    """Airflow's ``[core] hostname_callable`` for workers sharing a machine: the worker's own name, if set."""
    return os.environ.get(WORKER_NAME_ENV) or socket.getfqdn()


def run_interval(context: dict[str, Any]) -> tuple[date, date | None, str]:
    """(interval start, interval end, run id) of the running DAG run.

    Scheduled runs and backfills have a data interval; a manual run without one uses the date it was
    triggered for, so triggering the same day again replays that day's cycle.
    """
    start = context.get("data_interval_start") or context.get("logical_date") or context["dag_run"].run_after
    end = context.get("data_interval_end")
    return start.date(), end.date() if end else None, context["run_id"]
