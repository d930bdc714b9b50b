"""Where a cycle's wall time goes under Airflow: per task, the wait in the queue, the task's own start-up and finish
(process fork, DAG parse, imports, opening DuckDB, reporting back), the GX import and the stage's own seconds; and
the time no task was queued or running (the scheduler noticing an end and scheduling the next task).

Task times come from Airflow's metadata database (``task_instance``, read with SQLAlchemy, not Airflow: the
report should not pay Airflow's import), the stages' own seconds from ``cycles.stage_seconds``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from crawlcycle.airflow.environment import CONN_ENV, DAG_ID, airflow_env, airflow_home
from crawlcycle.airflow.support import GATE_TASKS
from crawlcycle.db import statements


class MetadataUnavailable(Exception):
    """Airflow's metadata database cannot be read; the message is one line naming it and why."""


@dataclass(frozen=True)
class TaskTime:
    """One task of a cycle (a mapped task's shards together: first queued to last ended), in seconds."""

    task: str
    shards: int
    queue_wait: float  # queued -> running
    startup: float  # running -> ended, less the stage's own seconds and the GX import
    gx_import: float
    own: float  # the stage's own seconds, as the product records them


@dataclass(frozen=True)
class CycleOverhead:
    cycle: int
    wall: float  # the DAG run, start to end
    tasks: list[TaskTime]
    between: float  # no task queued or running

    def line(self) -> str:
        """The cycle's wall time in parts; they add up to the run's wall time."""
        own, gx, startup, queue = (sum(getattr(t, f) for t in self.tasks)
                                   for f in ("own", "gx_import", "startup", "queue_wait"))
        slowest = max(self.tasks, key=lambda t: t.startup)
        return (f"run {self.wall:.1f} s = stages {own:.1f} s + GX import {gx:.1f} s + task start-up {startup:.1f} s "
                f"+ queue wait {queue:.1f} s + between tasks {self.between:.1f} s ({len(self.tasks)} tasks; "
                f"slowest start-up {slowest.task} {slowest.startup:.1f} s)")


def metadata_url(config: Path | None = None) -> str:
    """Airflow's metadata database: $AIRFLOW__DATABASE__SQL_ALCHEMY_CONN, else the one of the crawl of settings file
    ``config`` (``.airflow/airflow.db`` beside it, as `crawlcycle airflow` runs it; without one, this project's,
    which `crawlcycle demo` and `crawlcycle ui` use)."""
    return os.environ.get(CONN_ENV) or airflow_env(airflow_home(config))[CONN_ENV]


def task_rows(url: str, run_ids: list[str]) -> list[dict[str, Any]]:
    """The task instances of ``run_ids``, times as naive UTC datetimes."""
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite":
        path = Path(parsed.database or "")
        if not path.is_file():  # SQLite would create it: a report leaves nothing behind
            raise MetadataUnavailable(f"no Airflow metadata database at {path}")
        parsed = sa.make_url(f"sqlite:///file:{path}?mode=ro&uri=true")
    (sql,) = statements("airflow/task_overhead/task_instances")  # Airflow's database: SQLAlchemy runs it, not DuckDB
    query = sa.text(sql).bindparams(sa.bindparam("run_ids", expanding=True))
    engine = sa.create_engine(parsed)
    try:
        with engine.connect() as con:
            rows = con.execute(query, {"dag_id": DAG_ID, "run_ids": run_ids}).mappings().all()
    except sa.exc.SQLAlchemyError as e:
        first = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        raise MetadataUnavailable(f"Airflow metadata database {shown} cannot be read ({first})") from None
    finally:
        engine.dispose()
    return [{k: utc(v) if k.endswith(("_dttm", "_date", "_start", "_end")) else v for k, v in r.items()}
            for r in rows]


def utc(value: datetime | str | None) -> datetime | None:
    """An Airflow time as a naive UTC datetime: SQLite and the REST API give text, PostgreSQL aware datetimes."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def own_seconds(task: str, stage_seconds: dict[str, float]) -> tuple[float, float]:
    """(the stage's own seconds, the GX import's) of ``task`` in a cycle's stage_seconds."""
    gates = GATE_TASKS.get(task)
    if gates is None:
        return stage_seconds.get(task, 0.0), 0.0
    return (sum(stage_seconds.get(f"gate_{g}", 0.0) for g in gates),
            sum(stage_seconds.get(f"gate_{g}_import", 0.0) for g in gates))


def cycle_overhead(cycle: int, rows: list[dict[str, Any]], stage_seconds: dict[str, float]) -> CycleOverhead:
    """The parts of one cycle's wall time, from its DAG run's task instances (``task_rows``)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_task.setdefault(r["task_id"], []).append(r)
    tasks, spans = [], []
    for task, tis in by_task.items():
        queued = min(ti["queued_dttm"] or ti["start_date"] for ti in tis)
        start, end = min(ti["start_date"] for ti in tis), max(ti["end_date"] for ti in tis)
        own, gx = own_seconds(task, stage_seconds)
        span = (end - start).total_seconds()
        tasks.append((start, TaskTime(task, len(tis), (start - queued).total_seconds(), span - own - gx, gx, own)))
        spans.append((queued, end))
    run_start = rows[0]["run_start"] or min(s for s, _ in spans)
    run_end = rows[0]["run_end"] or max(e for _, e in spans)
    wall = (run_end - run_start).total_seconds()
    return CycleOverhead(cycle, wall, [t for _, t in sorted(tasks, key=lambda p: p[0])], wall - _covered(spans))


def _covered(spans: list[tuple[datetime, datetime]]) -> float:
    """Seconds inside at least one of ``spans`` (shards of a mapped task overlap)."""
    total, reach = 0.0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += (end - start).total_seconds()
            reach = end
        elif end > reach:
            total += (end - reach).total_seconds()
            reach = end
    return total


def overheads(cycles: list[tuple[int, str | None, dict[str, float]]],
              url: str | None = None) -> dict[int, CycleOverhead]:
    """Each cycle (number, DAG run id, stage seconds) that Airflow ran, by number; cycles without task instances
    (run by `crawlcycle cycle`) are left out. MetadataUnavailable when the metadata database cannot be read."""
    run_ids = [r for _, r, _ in cycles if r]
    rows = task_rows(url or metadata_url(), run_ids) if run_ids else []
    out = {}
    for cycle, run_id, seconds in cycles:
        mine = [r for r in rows if r["run_id"] == run_id]
        if mine:
            out[cycle] = cycle_overhead(cycle, mine, seconds)
    return out
