"""The crawl_cycle DAG under real Airflow: import checks and two cycles through ``dag.test()``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from crawlcycle.airflow.support import DUCKDB_POOL, log_failure
from crawlcycle.db import connect
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from tests.support.dag import DB_TASKS

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[1] / "dags"


@pytest.fixture
def dagbag(settings: Settings, airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from airflow.dag_processing.dagbag import DagBag

    write_toml(settings, tmp_path / "settings.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "settings.toml"))
    return DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"})


def test_dag_imports_cleanly_and_wires_every_stage(dagbag, settings: Settings) -> None:
    assert dagbag.import_errors == {}
    assert not dagbag.dag_warnings
    dag = dagbag.dags["crawl_cycle"]
    assert dag.max_active_runs == 1 and dag.timetable.can_be_scheduled  # time-based, so backfills work
    tasks = {t.task_id: t for t in dag.tasks}
    assert set(tasks) == DB_TASKS | {"fetch", "parse"}
    assert {t for t, op in tasks.items() if op.pool == DUCKDB_POOL} == DB_TASKS
    assert not Path(settings.db_path).exists()  # parsing the DAG file did no work
    # fetch and parse are mapped over host shards; everything downstream of the gates waits for them.
    assert tasks["fetch"].is_mapped and tasks["parse"].is_mapped
    assert tasks["gate_shards"].upstream_task_ids >= {"parse"} and "update" in tasks["gate_shards"].downstream_task_ids
    assert {"materialize"} <= tasks["gate_materialize"].upstream_task_ids
    # the last task updates the crawl-state asset, which the example export DAG is scheduled on
    (state,) = tasks["close"].outlets
    assert state.uri == Path(settings.db_path).resolve().as_uri() and not tasks["refit"].outlets
    assert list(dagbag.dags["export_pages"].timetable.asset_condition.objects) == [state]


def test_without_a_user_agent_the_dag_parses_and_begin_fails_in_one_line(
        settings: Settings, airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from crawlcycle.pipeline.stages import init

    anonymous = replace(settings, user_agent="")
    write_toml(anonymous, tmp_path / "anonymous.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "anonymous.toml"))
    dagbag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"})
    assert dagbag.import_errors == {}
    init(anonymous)
    run, lines = _run_logging_failures(dagbag.dags["crawl_cycle"], 1)
    assert run.state == "failed"
    failed = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert failed["begin"] == "failed" and failed["fetch"] == "upstream_failed", failed
    lines = [line for line in lines if "setting user_agent" in line]
    assert any(line.startswith("crawl_cycle.begin") and "\n" not in line for line in lines), lines
    with connect(anonymous, read_only=True) as con:  # refused before the cycle was opened
        assert con.execute("SELECT count(*) FROM cycles").fetchall() == [(0,)]


def test_an_unreadable_settings_file_parses_schedules_nothing_and_says_why(
        settings: Settings, airflow_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    broken = tmp_path / "settings.toml"
    broken.write_text("[ordering\nbatch_size = 10\n")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(broken))
    with _crawlcycle_errors() as records:
        dagbag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"})
    # the UI's banner of import errors says why, from the file that holds no DAG
    (where, error), = dagbag.import_errors.items()
    assert where.endswith("settings_check.py"), where
    assert f"SettingsError: setting config: {broken} is not valid TOML" in error, error
    assert error.rstrip().endswith("crawl_cycle schedules no run until it is mended"), error
    # each task parses the DAG file again: a cycle begun before the file broke must find its tasks
    cycle, export = dagbag.dags["crawl_cycle"], dagbag.dags["export_pages"]
    assert not cycle.timetable.can_be_scheduled and not export.timetable.can_be_scheduled
    assert cycle.doc_md.startswith(f"**Not scheduled**: setting config: {broken} is not valid TOML")
    lines = [r.getMessage() for r in records if str(broken) in r.getMessage()]
    assert lines and all("\n" not in line and "no run is scheduled until it is mended" in line for line in lines)


def test_two_cycles_through_dag_test(dagbag, settings: Settings, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from crawlcycle.pipeline import stages

    stages.init(settings)
    refit = stages.refit_models

    def refit_then_break(s: Settings, cycle: int) -> dict:
        """The refit, then the settings file made invalid while cycle 1 runs: its later tasks never read it."""
        out = refit(s, cycle)
        if cycle == 1:
            (tmp_path / "settings.toml").write_text('[ordering]\npolicy = "bfs"\nbatch_size = "many"\n')
        return out

    monkeypatch.setattr(stages, "refit_models", refit_then_break)
    dag = dagbag.dags["crawl_cycle"]
    for day in (1, 2):  # the second with a run parameter, as the trigger form gives it
        run = dag.test(logical_date=datetime(2026, 11, day, tzinfo=UTC),
                       run_conf={"refresh_policy": "none"} if day == 2 else None)
        assert run.state == "success", run
        if day == 1:  # cycle 1 finished on its record; the file is mended, edited, before cycle 2
            write_toml(replace(settings, policy="bfs"), tmp_path / "settings.toml")
    with connect(settings, read_only=True) as con:
        assert con.execute("SELECT settings->'values'->>'refresh_policy', settings->'sources'->>'refresh_policy' "
                           "FROM cycles ORDER BY cycle").fetchall() == [
            ("impact", None), ("none", "run parameter refresh_policy")]
        assert con.execute("SELECT count(*) FROM batches WHERE fetch_cycle = 3 AND kind = 'refresh'").fetchall() == [
            (0,)]
        cycles = con.execute("SELECT cycle, interval_start, status, fetched FROM cycles ORDER BY cycle").fetchall()
        assert [(c, str(d), s) for c, d, s, _ in cycles] == [(1, "2026-11-01", "done"), (2, "2026-11-02", "done")]
        assert all(f > 0 for *_, f in cycles)
        # cycle 1 scored and chose batch 2 with the policy it began with; cycle 2 began with the edited file
        assert con.execute("SELECT fetch_cycle, list(DISTINCT policy) FROM batches WHERE fetch_cycle > 1 "
                           "AND kind = 'new' GROUP BY 1 ORDER BY 1").fetchall() == [(2, ["hybrid"]), (3, ["bfs"])]
        assert con.execute("SELECT settings->'sources'->>'policy' FROM cycles ORDER BY cycle").fetchall() == [
            (None,), (f"file {tmp_path / 'settings.toml'}",)]
        # a URL is fetched twice only as a refresh of its stored page
        assert con.execute("SELECT count(*) - count(DISTINCT url) FROM fetch_log f WHERE NOT EXISTS (SELECT 1 FROM "
                           "batches b WHERE b.fetch_cycle = f.cycle AND b.url = f.url AND b.kind = 'refresh')"
                           ).fetchall()[0][0] == 0
        worst = con.execute("SELECT max(n) FROM (SELECT count(*) n FROM batches WHERE fetch_cycle = 3 GROUP BY host)")
        assert worst.fetchall()[0][0] <= settings.per_host_cap
        assert con.execute("SELECT count(*) FROM links").fetchall()[0][0] > 50
        # all four gates validated both cycles and passed
        assert con.execute("SELECT count(DISTINCT (cycle, gate)), bool_and(success) FROM dq_results").fetchall() \
            == [(8, True)]


def test_operational_defaults_come_from_settings(settings: Settings, airflow_db: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    custom = replace(settings, writer_queue="writer-test", task_timeout=4321.0, fetch_task_retries=5,
                     fetch_task_max_retry_delay=77.0, max_failed_runs=2, task_retries=2)
    write_toml(custom, tmp_path / "custom.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "custom.toml"))
    dag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"}).dags["crawl_cycle"]
    assert dag.max_consecutive_failed_dag_runs == 2
    for t in dag.tasks:
        assert t.execution_timeout == timedelta(seconds=4321), t.task_id
        callbacks = t.on_failure_callback  # a list on plain tasks, the function itself on mapped ones
        assert log_failure in (callbacks if isinstance(callbacks, list) else [callbacks]), t.task_id
        # DuckDB tasks on the writer queue; fetch and parse shards on any worker of the default queue
        assert t.queue == ("writer-test" if t.task_id in DB_TASKS else "default"), t.task_id
    tasks = {t.task_id: t for t in dag.tasks}
    fetch, parse = tasks["fetch"], tasks["parse"]
    assert (fetch.retries, fetch.retry_exponential_backoff, fetch.max_retry_delay) == (5, 2.0, timedelta(seconds=77))
    assert (parse.retries, parse.retry_exponential_backoff) == (2, 0)


@contextmanager
def _crawlcycle_errors() -> Iterator[list[logging.LogRecord]]:
    """The ERROR records the crawlcycle loggers write meanwhile, read from those loggers themselves: Airflow's
    logging set-up replaces the root logger's handlers (pytest's caplog among them)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(level=logging.ERROR)
    handler.emit = records.append
    logging.getLogger("crawlcycle").addHandler(handler)
    try:
        yield records
    finally:
        logging.getLogger("crawlcycle").removeHandler(handler)


def _run_logging_failures(dag, day: int) -> tuple[object, list[str]]:
    """dag.test one interval; the ERROR lines the crawlcycle loggers wrote meanwhile."""
    with _crawlcycle_errors() as records:
        run = dag.test(logical_date=datetime(2026, 11, day, tzinfo=UTC))
    return run, [r.getMessage() for r in records]


def test_failure_callback_logs_one_line_for_a_real_failure(settings: Settings, airflow_db: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    # The crawl database path names a folder: begin cannot open it.
    write_toml(replace(settings, db_path=str(tmp_path), task_retries=0), tmp_path / "broken.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "broken.toml"))
    dag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"}).dags["crawl_cycle"]
    run, lines = _run_logging_failures(dag, 1)
    assert run.state == "failed"
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert lines[0].startswith(f"crawl_cycle.begin run {run.run_id} try 1 failed: DatabaseOpenError: "
                               f"setting db_path: {tmp_path} cannot be opened (")
    assert lines[0].endswith("Is a directory)")


def test_a_failing_gate_fails_its_task_and_nothing_reaches_duckdb(settings: Settings, airflow_db: Path,
                                                                  tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    from crawlcycle.pipeline.stages import init
    from crawlcycle.quality.gate_suites import suites

    # No demo page holds 1,000 links: the parse gate's links_per_page check fails on cycle 1.
    broken = replace(settings, gate_min_links_per_page=1000.0, gate_min_sample=1, task_retries=0)
    write_toml(broken, tmp_path / "strict.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "strict.toml"))
    init(broken)
    dag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"}).dags["crawl_cycle"]
    run, lines = _run_logging_failures(dag, 1)
    assert run.state == "failed"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["gate_shards"] == "failed" and states["update"] == "upstream_failed", states
    # One line for the alert names the gate, the cycle and the failing check.
    n = len(suites(broken)["parse"])
    assert lines == [f"crawl_cycle.gate_shards run {run.run_id} try 1 failed: GateFailed: gate parse failed for "
                     f"cycle 1 on links_per_page: {n - 1}/{n} checks passed"], lines
    with connect(broken, read_only=True) as con:
        failed = con.execute("SELECT expectation, report FROM dq_results WHERE NOT success").fetchall()
        assert con.execute("SELECT count(*) FROM pages").fetchall() == [(0,)]
    assert [f for f, _ in failed] == ["links_per_page"] and Path(failed[0][1]).is_file()


def test_a_sensor_waits_for_a_missing_query_log_partition(settings: Settings, airflow_db: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from airflow.dag_processing.dagbag import DagBag

    from crawlcycle.pipeline.stages import init
    from crawlcycle.ranking.query_log import partition_dir

    # a log whose first day landed and whose second did not
    first = date(2026, 11, 1)
    shutil.copytree(partition_dir(settings.query_log_dir, first), partition_dir(tmp_path / "log", first))
    waiting = replace(settings, missing_query_log="wait", query_log_wait=1.0, task_retries=0,
                      query_log_dir=str(tmp_path / "log"))
    write_toml(waiting, tmp_path / "wait.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "wait.toml"))
    init(waiting)
    dag = DagBag(dag_folder=str(DAGS), known_pools={DUCKDB_POOL, "default_pool"}).dags["crawl_cycle"]
    assert dag.get_task("query_log_partition").downstream_task_ids == {"begin"}
    assert dag.test(logical_date=datetime(2026, 11, 1, tzinfo=UTC)).state == "success"
    # the second day: the sensor gives up after query_log_wait and begin never runs
    run = dag.test(logical_date=datetime(2026, 11, 2, tzinfo=UTC))
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "failed" and states["query_log_partition"] == "failed", states
    assert states["begin"] == "upstream_failed"
    with connect(waiting, read_only=True) as con:
        assert con.execute("SELECT cycle, query_log FROM v_cycle_summary").fetchall()[0][1].endswith(" rows")
        assert con.execute("SELECT count(*) FROM cycles").fetchall() == [(1,)]
