"""Two backfilled cycles under a real scheduler with LocalExecutor (Airflow's components as `crawlcycle airflow` runs
them): mapped fetch shards run in parallel while every task that opens the DuckDB file runs alone (one-slot pool), a
second backfill of the last interval replays it without changing the tables, and `crawlcycle report` splits each
run's wall time into the stages' own seconds and Airflow's overhead from this scheduler's metadata database."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import polars as pl
import psutil
import pytest
import requests

from crawlcycle.airflow.support import DUCKDB_POOL
from crawlcycle.db import connect
from crawlcycle.devtools.airflow_stack import AirflowStack
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from crawlcycle.ui.report import airflow_runs, cycle_summary
from tests.support.net import free_port, port_open

pytestmark = pytest.mark.airflow


# The DAG's tasks in the order they run, a mapped task's shards as one.
TASKS = ["begin", "plan_shards", "fetch", "parse", "gate_shards", "update", "gate_update", "refit", "select_needy",
         "score", "materialize", "gate_materialize", "close"]


def _span(ti: dict) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(ti["start_date"]), datetime.fromisoformat(ti["end_date"])


def _cycles(settings: Settings) -> list[tuple]:
    with connect(settings, read_only=True) as con:
        return con.execute("SELECT cycle, interval_start::VARCHAR, status, started_at FROM cycles ORDER BY cycle") \
            .fetchall()


def test_backfill_two_cycles_with_local_executor(settings: Settings, tmp_path: Path) -> None:
    from crawlcycle.pipeline.stages import init

    write_toml(settings, tmp_path / "settings.toml")
    init(settings)
    stack = AirflowStack(tmp_path / "airflow", port=free_port(), config=tmp_path / "settings.toml",
                         log=lambda m: None)
    stack.setup()
    with stack:
        stack.start()
        _unpause(stack, "export_pages")  # the example DAG scheduled on the crawl-state asset
        stack.backfill("2026-11-01", "2026-11-02")
        runs = stack.wait_for_runs(2, timeout=600)
        exports = _wait_for_exports(stack, settings, {1, 2}, timeout=300)
        tis = [ti for run in runs for ti in stack.task_instances(run["dag_run_id"])]
        digest, cycles = table_digest(settings), _cycles(settings)
        # Reprocessing clears the interval's finished run and queues it again under the same run id.
        stack.backfill("2026-11-02", "2026-11-02", reprocess=True)
        replayed = stack.wait_for_runs(2, timeout=300)
        started = [q for p in stack.components.values() for q in [psutil.Process(p.pid),
                                                                   *psutil.Process(p.pid).children(recursive=True)]]
    # Stopping leaves nothing behind (a stray scheduler would hold its ports against the next start).
    assert started and not [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert all(ti["state"] == "success" for ti in tis), [(t["task_id"], t["state"]) for t in tis]
    db_spans = sorted(_span(ti) for ti in tis if ti["pool"] == DUCKDB_POOL)
    assert len(db_spans) == 2 * 11
    # The one-slot pool serialises every DuckDB task, across runs too.
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(db_spans, db_spans[1:], strict=False))
    fetches = [_span(ti) for ti in tis if ti["task_id"] == "fetch"]
    assert len(fetches) >= 2 * 2
    overlapping = sum(1 for i, a in enumerate(fetches) for b in fetches[i + 1:] if a[0] < b[1] and b[0] < a[1])
    assert overlapping >= 1, "mapped fetch shards never ran at the same time"
    with connect(settings, read_only=True) as con:
        done = con.execute("SELECT count(*), min(fetched) FROM cycles WHERE status = 'done'").fetchall()[0]
    assert done[0] == 2 and done[1] > 0
    # Only the last interval ran again, as a fresh run of its old DAG run; the first run is untouched.
    assert [r["dag_run_id"] for r in replayed] == [r["dag_run_id"] for r in runs]
    assert [replayed[0][k] for k in ("start_date", "end_date")] == [runs[0][k] for k in ("start_date", "end_date")]
    assert datetime.fromisoformat(replayed[1]["start_date"]) > datetime.fromisoformat(runs[1]["end_date"])
    # The replay rewrote cycle 2 in place and left every state table as it was.
    after = _cycles(settings)
    assert [c[:3] for c in after] == [c[:3] for c in cycles] == [(1, "2026-11-01", "done"), (2, "2026-11-02", "done")]
    assert after[0][3] == cycles[0][3] < cycles[1][3] < after[1][3]
    assert table_digest(settings) == digest
    # each cycle's close updated the crawl-state asset, and the DAG scheduled on it exported that cycle's pages
    assert all(r["run_type"] == "asset_triggered" and r["state"] == "success" for r in exports), exports
    with connect(settings, read_only=True) as con:
        for cycle in (1, 2):
            stored = con.execute("SELECT count(*) FROM pages WHERE cycle = ? AND reason IS NULL AND duplicate_of IS "
                                 "NULL", [cycle]).fetchone()[0]
            assert stored > 0 and pl.read_parquet(_export(settings, cycle)).height == stored
    # Each run's task times from this scheduler's metadata database, joined with the stages' own seconds.
    summary = cycle_summary(settings)
    runs_by_cycle, no_airflow = airflow_runs(summary, stack.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    assert not no_airflow and sorted(runs_by_cycle) == [1, 2]
    for run, cycle_seconds in zip(runs_by_cycle.values(), summary["seconds"], strict=True):
        assert [t.task for t in run.tasks] == TASKS
        # every stage's own seconds lie inside its task's running time, and the parts leave no negative gap
        assert all(t.queue_wait >= 0 and t.startup >= 0 and t.own > 0 for t in run.tasks), run.tasks
        assert run.between >= 0 and run.wall > cycle_seconds
        # the executor imported GX before forking the workers: no gate task imports it again, so its import
        # takes less than the gate's validation
        assert all(t.gx_import < t.own for t in run.tasks if t.task.startswith("gate_")), run.tasks


def _export(settings: Settings, cycle: int) -> Path:
    return Path(settings.data_dir) / "exports" / f"pages-cycle-{cycle}.parquet"


def _unpause(stack: AirflowStack, dag_id: str, timeout: float = 120) -> None:
    """Unpause ``dag_id`` once the DAG processor has stored it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            stack.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
            return
        except requests.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _wait_for_exports(stack: AirflowStack, settings: Settings, cycles: set[int], timeout: float) -> list[dict]:
    """The runs of export_pages once every cycle of ``cycles`` has its export file and no run is unfinished."""
    deadline = time.monotonic() + timeout
    while True:
        runs = stack.runs("export_pages")
        if all(_export(settings, c).is_file() for c in cycles) and all(r["state"] in ("success", "failed")
                                                                        for r in runs):
            return runs
        if time.monotonic() > deadline:
            raise TimeoutError(f"export_pages runs after {timeout:.0f}s: {[(r['run_type'], r['state']) for r in runs]}")
        time.sleep(3)


def test_ui_stopped_by_sigterm_stops_everything_it_started(settings: Settings, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    from dataclasses import replace


    ui = replace(settings, demo_port=free_port(), data_dir=str(tmp_path / "data"))
    write_toml(ui, tmp_path / "ui.toml")
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("crawlcycle")), "ui", "--config",
                             str(tmp_path / "ui.toml"), "--port", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("Airflow UI:"):
                break
        started = psutil.Process(proc.pid).children(recursive=True)
        assert port_open(port) and port_open(ui.demo_port)
        proc.send_signal(signal.SIGTERM)  # as a service manager or `timeout` stops it
        assert proc.wait(timeout=120) == 0  # the way ui is meant to be stopped, as with Ctrl-C
    finally:
        proc.kill()
    assert len(started) >= 3 and not [p for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not port_open(port) and not port_open(ui.demo_port)


def test_a_cycle_survives_the_whole_scheduler_killed_and_restarted(settings: Settings, tmp_path: Path) -> None:
    """SIGKILL to Airflow itself (scheduler, executor and the running task at once), then a new start: the
    orphaned task is failed once its heartbeat times out, retried, and the cycle ends with the tables of a cycle that
    ran straight through."""
    import signal
    import time
    from dataclasses import replace

    from crawlcycle.devtools.airflow_stack import stop_group
    from crawlcycle.devtools.fault_run import AIRFLOW_RUN, compare
    from crawlcycle.pipeline.stages import init, run_cycle

    # the same layout one folder down: paths the tables hold compare equal
    straight = replace(settings, db_path=str(tmp_path / "s" / "crawl.duckdb"), data_dir=str(tmp_path / "s" / "data"))
    init(straight)
    run_cycle(straight, datetime(2026, 11, 1).date(), progress=lambda m: None)
    write_toml(settings, tmp_path / "settings.toml")
    init(settings)
    stack = AirflowStack(tmp_path / "airflow", port=free_port(), config=tmp_path / "settings.toml", log=lambda m: None,
                         env={"AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "15",
                              "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "2"})
    stack.setup()
    with stack:
        stack.start()
        stack.backfill("2026-11-01", "2026-11-01")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # until refit (inside its DuckDB work) is running
            runs = stack.runs()
            tis = stack.task_instances(runs[0]["dag_run_id"]) if runs else []
            if any(t["task_id"] == "refit" and t["state"] == "running" for t in tis):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"refit never ran: {[(t['task_id'], t['state']) for t in tis]}")
        for name in list(stack.components):  # Airflow, every component and its children, all at once
            stop_group(stack.components.pop(name), signal.SIGKILL, grace=0)
        stack.start()
        (run,) = stack.wait_for_runs(1, timeout=600)
        tis = stack.task_instances(run["dag_run_id"])
    # the task the kill met (refit, unless it had just ended) ran again
    assert [t["task_id"] for t in tis if t["try_number"] >= 2], [(t["task_id"], t["try_number"]) for t in tis]
    found = compare(straight, settings, AIRFLOW_RUN)
    # every table holds the same rows, but the columns of a cycle that name its Airflow run (run_id, interval end)
    assert not found["differ"] and found["urls_lost"] == found["urls_doubled"] == 0, found
