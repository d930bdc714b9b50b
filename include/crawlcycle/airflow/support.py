"""What the DAG files need from the package, kept light: the DAG parser imports it on every parse."""

from __future__ import annotations

import logging
import os
import socket
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from crawlcycle.contracts.policies import REGISTRY
from crawlcycle.contracts.refresh_policies import REGISTRY as REFRESH_REGISTRY
from crawlcycle.pipeline.stage_order import GATE, SHARD, STAGE_ORDER, Task
from crawlcycle.settings import CONFIG_ENV, Settings, SettingsError
from crawlcycle.settings.sources import load_settings

DUCKDB_POOL = "crawl_duckdb"
# Names a Celery worker in task instances' hostname when several run on one machine (see worker_name).
WORKER_NAME_ENV = "CELERY_WORKER_NAME"
# The gate task ids and the gates each runs, in order: how `crawlcycle report` finds a gate task's own seconds
# (gate_<stage> in cycles.stage_seconds).
GATE_TASKS = {t.name: t.gates for t in STAGE_ORDER if t.kind == GATE}
# Settings a task overrides: shards already run in parallel as mapped tasks, and a process pool inside a parse task
# would re-import the `airflow` entry point in each worker. Each is read live (settings.LIVE), so it holds over the
# settings the cycle recorded.
TASK_OVERRIDES = {"parse": {"parse_workers": 1}}
# The XCom under which begin hands the settings it resolved to the later tasks of its cycle, which never read the
# settings file: an edit, or a file made invalid, applies from the next cycle.
BEGUN = "settings"
# Each retry of a fetch shard waits this many times longer than the one before (up to fetch_task_max_retry_delay).
FETCH_BACKOFF = 2.0

log = logging.getLogger("crawlcycle")


def dag_settings() -> tuple[Settings, str | None]:
    """Settings read at DAG parse time (schedule and start date); no I/O beyond the TOML file. A missing user
    agent does not stop the parse (a DAG missing from the UI says nothing): begin fails on it, in one line.

    A settings file that cannot be read does not stop it either: each task parses the DAG file again, and the tasks
    of a begun cycle run on what its begin resolved. The second value then says why, the settings are the
    defaults and the environment, and the DAG files schedule nothing until the file is mended."""
    try:
        return load_settings(), None
    except SettingsError as e:
        log.error("crawlcycle: %s; no run is scheduled until it is mended, a begun cycle finishes on its record", e)
        return load_settings(environ={k: v for k, v in os.environ.items() if k != CONFIG_ENV}), str(e)


def choice_doc(setting: str, what: str) -> str:
    """A DAG run parameter choosing a policy, in Markdown: what leaving it empty does, and a line per choice of its
    registry (``policy``: the ordering policies, ``refresh_policy``: the refresh policies)."""
    registry = {"policy": REGISTRY, "refresh_policy": REFRESH_REGISTRY}[setting]
    return f"{what} for this run (empty: the {setting} setting)\n\n" + "\n".join(
        f"- `{p.name}`: {p.description}" for p in registry)


def default_args(settings: Settings) -> dict[str, Any]:
    """Arguments of every task: retries, a time limit, and a one-line log of why a task failed."""
    return {
        "retries": settings.task_retries,
        "retry_delay": timedelta(seconds=settings.task_retry_delay),
        "execution_timeout": timedelta(seconds=settings.task_timeout),
        "on_failure_callback": log_failure,
    }


def crawl_state(settings: Settings) -> Any:
    """The crawl database as an Airflow asset: the cycle's last task updates it (the event's extra names the cycle),
    so a DAG scheduled on it (an indexer, an export: ``dags/export_pages.py``) runs after every cycle. Named by the
    database's ``file://`` URI: Airflow keeps one active asset per name, and two crawls (two settings files) served
    by one Airflow each have their own."""
    from airflow.sdk import Asset

    return Asset(Path(settings.db_path).resolve().as_uri())


def task_args(settings: Settings, t: Task) -> dict[str, Any]:
    """The Airflow arguments of task ``t`` beyond ``default_args``."""
    if t.kind == SHARD:
        # fetch shards meet flaky hosts and networks: more retries, each after a longer wait
        return {"retries": settings.fetch_task_retries, "retry_exponential_backoff": FETCH_BACKOFF,
                "max_retry_delay": timedelta(seconds=settings.fetch_task_max_retry_delay)} if t.name == "fetch" else {}
    # A task that opens the DuckDB file runs alone, on one machine (the one-slot pool holds it under LocalExecutor,
    # which ignores queues; the writer queue's single worker holds it under Celery), and runs after shard tasks
    # that were skipped (a cycle without shards maps them over nothing).
    outlets = [crawl_state(settings)] if t == STAGE_ORDER[-1] else []
    return {"pool": DUCKDB_POOL, "queue": settings.writer_queue, "trigger_rule": "none_failed", "outlets": outlets}


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
    """(the day the run crawls for, the end of its data interval, run id) of the running DAG run.

    The day is the run's logical date: for a scheduled run or a backfill the start of its data interval (airflow.cfg
    has cron schedules make runs of whole intervals, each started once its interval is over), for a manual run the
    date it was triggered for, so triggering the same day again replays that day's cycle. A manual run's data
    interval is the last whole one before that date: not its own, so no end is recorded for it.
    """
    start = context.get("logical_date") or context["dag_run"].run_after
    interval = context.get("data_interval_start"), context.get("data_interval_end")
    end = interval[1] if interval[0] == start else None
    return start.date(), end.date() if end else None, context["run_id"]
