"""`crawlcycle report`'s Airflow overhead lines on a real crawl database: the parts of a run's wall time worked out
from task-instance rows (a SQLite file with the columns of Airflow's task_instance and dag_run that the report reads;
tests/test_scheduler.py reads a real scheduler's), and one line, no traceback, when there is no metadata database.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from crawlcycle.db import connect
from crawlcycle.pipeline import stages
from crawlcycle.pipeline.stages import record_seconds
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from crawlcycle.ui.report import print_report

T0 = datetime(2026, 11, 24, 12, 0, 0)
RUN = "backfill__2026-11-01T00:00:00+00:00"
SECONDS = {"begin": 0.5, "fetch": 1.5, "gate_fetch_import": 3.0, "gate_fetch": 1.0, "gate_parse_import": 0.0,
           "gate_parse": 0.5}
# task, map index, queued, started, ended: seconds after T0. Two fetch shards overlap; gaps lie between the tasks.
TASKS = [("begin", -1, 0.0, 0.1, 1.6), ("fetch", 0, 2.0, 2.1, 4.0), ("fetch", 1, 2.0, 2.3, 4.5),
         ("gate_shards", -1, 5.0, 5.1, 10.1)]


def _at(seconds: float) -> str:
    return str(T0 + timedelta(seconds=seconds))  # as SQLite holds Airflow's times: UTC text


def _metadata(path: Path) -> str:
    """A metadata database with one DAG run of crawl_cycle (0 s to 11 s) and the task instances of TASKS."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE dag_run (dag_id TEXT, run_id TEXT, start_date TEXT, end_date TEXT)")
        db.execute("CREATE TABLE task_instance (dag_id TEXT, run_id TEXT, task_id TEXT, map_index INT, "
                   "queued_dttm TEXT, start_date TEXT, end_date TEXT)")
        db.execute("INSERT INTO dag_run VALUES ('crawl_cycle', ?, ?, ?)", [RUN, _at(0), _at(11)])
        db.executemany("INSERT INTO task_instance VALUES ('crawl_cycle', ?, ?, ?, ?, ?, ?)",
                       [(RUN, t, m, _at(q), _at(s), _at(e)) for t, m, q, s, e in TASKS])
    return f"sqlite:///{path}"


@pytest.fixture
def crawl(settings: Settings) -> Settings:
    """A crawl database with cycle 1 run by Airflow (its stage seconds recorded) and cycle 2 by `crawlcycle cycle`."""
    stages.init(settings)
    first = stages.begin(settings, date(2026, 11, 1), run_id=RUN)
    with connect(settings) as con:
        record_seconds(con, first, SECONDS)
        con.execute("UPDATE cycles SET status = 'done', finished_at = current_timestamp")
    stages.begin(settings, date(2026, 11, 2))
    return settings


def test_the_report_splits_each_airflow_run_into_its_parts(crawl: Settings, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    print_report(crawl, airflow_metadata=_metadata(tmp_path / "airflow.db"))
    out = capsys.readouterr().out
    # begin: 0.1 s queued, 1.5 s running of which 0.5 s its own; the shards together: first queued 2.0, started
    # 2.1, last ended 4.5, own 1.5 (the slowest shard's); gate_shards: both gates' seconds and GX import; 1.8 s
    # between tasks (11 s less the 9.2 s some task was queued or running)
    assert ("cycle 1 Airflow overhead: run 11.0 s = stages 3.5 s + GX import 3.0 s + task start-up 2.4 s + queue "
            "wait 0.3 s + between tasks 1.8 s (3 tasks; slowest start-up begin 1.0 s)") in out
    assert "cycle 2 Airflow overhead: no Airflow task instances (run outside Airflow" in out
    table = out.split("Airflow tasks of cycle 1")[1].split("needy queries")[0]
    rows = [line.split("┆") for line in table.splitlines() if "┆" in line][1:]
    assert [[c.strip(" │") for c in r] for r in rows] == [["begin", "1", "0.1", "1.0", "0.0", "0.5"],
                                                        ["fetch", "2", "0.1", "0.9", "0.0", "1.5"],
                                                        ["gate_shards", "1", "0.1", "0.5", "3.0", "1.5"]]


def test_without_a_metadata_database_the_report_says_so_in_one_line(crawl: Settings, tmp_path: Path) -> None:
    write_toml(crawl, tmp_path / "s.toml")
    missing = tmp_path / "no-airflow" / "airflow.db"
    res = subprocess.run([str(Path(sys.executable).with_name("crawlcycle")), "report", "--config",
                          str(tmp_path / "s.toml")], capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{missing}"})
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    lines = [line for line in res.stdout.splitlines() if "Airflow" in line]
    assert lines == [f"Airflow task overhead: no Airflow metadata database at {missing}; cycles run with "
                     "`crawlcycle cycle` have no task instances"]
    assert not missing.parent.exists()  # reading leaves nothing behind


def test_an_unreadable_metadata_database_is_one_line(crawl: Settings, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "airflow.db").write_text("not a database")
    print_report(crawl, airflow_metadata=f"sqlite:///{tmp_path / 'airflow.db'}")
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Airflow task overhead"))
    assert line.startswith(f"Airflow task overhead: Airflow metadata database sqlite:///{tmp_path / 'airflow.db'} "
                           "cannot be read (file is not a database)")
