"""`crawlcycle celery-demo`: two cycles under CeleryExecutor with PostgreSQL and Redis on this machine. Fetch
shards spread over both general workers, every DuckDB task runs on the one-slot writer, and nothing the demo
started outlives it."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest

from crawlcycle.airflow.environment import ROOT
from crawlcycle.devtools.celery_demo import GENERAL_WORKERS, WRITER, check_assignment, run_celery_demo
from crawlcycle.settings.sources import load_settings
from tests.support.dag import DB_TASKS


def _row(task: str, worker: str, queue: str, map_index: int = -1) -> dict:
    return {"run": "r1", "task": task, "map_index": map_index, "queue": queue, "worker": worker, "state": "success"}


def test_check_assignment_names_each_break_of_the_topology() -> None:
    good = [_row("fetch", "general1", "default", 0), _row("fetch", "general2", "default", 1),
            _row("parse", "general1", "default", 0), _row("update", WRITER, "crawl_writer")]
    assert check_assignment(good, "crawl_writer") == []
    bad = [*good[:1], _row("parse", WRITER, "default", 0), _row("update", "general2", "crawl_writer")]
    problems = check_assignment(bad, "crawl_writer")
    assert len(problems) == 3, problems
    assert "fetch shards ran on ['general1']" in problems[0]
    assert problems[1].startswith("update ran on general2") and problems[2] == "parse[0] ran on writer"


@pytest.mark.airflow
@pytest.mark.services
def test_celery_demo_spreads_shards_and_keeps_one_writer(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    settings = load_settings(ROOT / "crawlcycle.toml", environ={})
    before = {p.pid for p in psutil.process_iter()}
    result = run_celery_demo(settings, tmp_path / "celery-demo", cycles=2, log=lambda m: None)
    out = capsys.readouterr().out
    rows = result["rows"]
    assert result["problems"] == [], result["problems"]
    # the runs of the days 2026-11-01 and -02, each named by when it runs: once its day is over
    assert {r["run"] for r in rows} == {"backfill__2026-11-02T00:00:00+00:00", "backfill__2026-11-03T00:00:00+00:00"}
    assert all(r["state"] == "success" for r in rows)
    fetches = [r for r in rows if r["task"] == "fetch"]
    assert {r["worker"] for r in fetches} == set(GENERAL_WORKERS) and len(fetches) >= 4
    db_rows = [r for r in rows if r["task"] in DB_TASKS]
    assert len(db_rows) == 2 * len(DB_TASKS)
    assert {(r["worker"], r["queue"]) for r in db_rows} == {(WRITER, settings.writer_queue)}
    # Each worker imported GX before its pool forked (Celery's imports, airflow.cfg): no gate task imports it again,
    # so in every cycle the gates' GX import takes less than their validation.
    costs = [re.match(r"validation ([\d.]+) s \+ GX import ([\d.]+) s", g) for g in result["gates"]]
    assert len(costs) == 2 and all(c and float(c[2]) < float(c[1]) for c in costs), result["gates"]
    # The printed table has one line per task instance, naming its worker.
    table = [line.split() for line in out.splitlines() if line.startswith("backfill__")]
    assert len(table) == len(rows) and {line[-1] for line in table} == {*GENERAL_WORKERS, WRITER}
    # PostgreSQL, Redis, Airflow and the workers are gone.
    assert not [p for p in psutil.process_iter() if p.pid not in before and _started_by_demo(p, tmp_path)]


def _started_by_demo(p: psutil.Process, home: Path) -> bool:
    try:
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        return "crawlcycle-services-" in " ".join(p.cmdline()) or p.environ().get("AIRFLOW_HOME", "").startswith(
            str(home))
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
