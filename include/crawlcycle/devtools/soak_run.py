"""The soak run (``crawlcycle soak``, ``make soak``): daily cycles scheduled by Airflow's own scheduler, catching up
from a start date ``cycles`` days back on the changing demo web, while a seeded schedule of SIGKILLs hits Airflow's
scheduler, API server and DAG processor, task processes, and the writer (a task that opens the crawl database) inside
its DuckDB transaction. Afterwards every table is compared with a clean crawl of the same days.

The clean crawl runs each task in turn in the soak's own process (fault_run's straight run, without a process per
task), counting each task's events: the calls into DuckDB, file writes, renames and requests the kill points are
drawn from. Then Airflow runs
as separate processes (scheduler with LocalExecutor, API server, DAG processor, triggerer), each in its own process
group, and the soak, like a service manager, restarts a component a few seconds after killing it:

- a component kill fires once the task it waits for has started (a task of a cycle, drawn from the clean crawl's),
  read from Airflow's metadata database, which the soak reads itself while the API server may be down; the
  scheduler's group holds its executor and the tasks it runs, which die with it;
- a task kill is fault_run's kill switch, armed in the task's own process by a listener
  (``crawlcycle.devtools.soak_plugin``) on the first try of the task instance the plan names: the process SIGKILLs
  itself at the drawn event (a writer kill: a DuckDB call well inside a stage that writes the database). Where each
  landed, and whether a DuckDB transaction was open, goes to ``kills.jsonl``.

Every kill is retried as Airflow retries (``task_retries``; a scheduler that died is taken over once its heartbeat is
older than ``scheduler_health_check_threshold``). The run fails when a table differs from the clean crawl's (the
columns naming the Airflow run aside), a cycle is missing or doubled, a DAG run failed, or a request came sooner
than ``min_delay`` after the one before to its host.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from airflow.listeners import hookimpl

from crawlcycle.airflow.environment import DAG_ID, ROOT
from crawlcycle.devtools import fault_run
from crawlcycle.devtools.airflow_stack import COMPONENTS, AirflowStack, stop_group
from crawlcycle.devtools.celery_demo import free_port
from crawlcycle.devtools.demo import CrawlDate, start_web
from crawlcycle.pipeline.stage_order import STAGE_ORDER
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml

PLAN_ENV = "SOAK_KILL_PLAN"  # the plan file a task process reads its kill point from (not a CRAWLCYCLE_ setting)
TARGETS = ("scheduler", "api-server", "dag-processor", "task", "writer")  # what a kill hits, spread evenly
# The tasks that write the crawl database inside a transaction that spans their work (begin commits a row first).
WRITERS = ("update", "refit", "select_needy", "score", "materialize", "close")
ORDER = {t.name: k for k, t in enumerate(STAGE_ORDER)}
RETRIES = 4  # per task: a task may meet a kill of its own and one of its scheduler's, and be retried both times


@dataclass(frozen=True)
class ComponentKill:
    component: str
    cycle: int      # the kill fires once ``task`` of this cycle has started
    task: str
    restart_after: float  # seconds the component stays down


# --- in the task process -----------------------------------------------------------------------------------------


class TaskKills:
    """The listener of ``soak_plugin``: on the first try of a task instance the plan (``PLAN_ENV``) names, arm the
    kill switch at its kill point; each point fires once (``kills.jsonl`` holds those that did)."""

    @hookimpl
    def on_task_instance_running(self, previous_state: Any, task_instance: Any) -> None:
        path = os.environ.get(PLAN_ENV)
        if not path or task_instance.dag_id != DAG_ID or task_instance.try_number != 1:
            return
        plan = json.loads(Path(path).read_text())
        day = task_instance.get_template_context()["data_interval_start"].date()
        key = task_key((day - date.fromisoformat(plan["start"])).days + 1, task_instance.task_id,
                       task_instance.map_index)
        log = Path(plan["log"])
        fired = {row["task"] for row in fault_run.read_jsonl(log)}
        if key not in plan["tasks"] or key in fired:
            return
        (kind, n), lag = plan["tasks"][key]
        fault_run.arm(fault_run.KillSwitch((kind, n), lag, log, {"task": key}, product_only=True))


def task_key(cycle: int, task: str, map_index: int | None) -> str:
    """fault_run's name of a task instance: ``<cycle>:<task>[<shard>]``."""
    return f"{cycle}:{task}" + (f"[{map_index}]" if map_index is not None and map_index >= 0 else "")


# --- the plan ------------------------------------------------------------------------------------------------------


def soak_plan(tasks: list[fault_run.Task], kills: int, rng: random.Random
              ) -> tuple[list[ComponentKill], dict[str, tuple[tuple[str, int], float]]]:
    """``kills`` kills spread evenly over TARGETS in a seeded order: component kills, each waiting for a task drawn
    from the clean crawl's, in the order they fire; and task kills (task key -> kill point), one per task instance:
    a writer's at a DuckDB call between the first fifth and the last tenth of its stage's calls, another task's at
    any event it had."""
    targets = [TARGETS[k % len(TARGETS)] for k in range(kills)]
    rng.shuffle(targets)
    components, points = [], {}
    free = [t for t in tasks if t.events]
    for target in targets:
        if target in COMPONENTS:
            t = rng.choice(tasks)
            components.append(ComponentKill(target, t.cycle, t.task, round(rng.uniform(1.0, 8.0), 1)))
            continue
        pool = [t for t in free if t.key not in points and (t.task in WRITERS) == (target == "writer")
                and (target != "writer" or t.events.get("duckdb", 0) >= 10)]
        if not pool:
            continue
        t = rng.choice(pool)
        kind = "duckdb" if target == "writer" else rng.choice(sorted(t.events))
        low, high = (t.events[kind] // 5, t.events[kind] * 9 // 10) if target == "writer" else (1, t.events[kind])
        points[t.key] = ((kind, rng.randint(max(1, low), max(1, high))), 0.0 if rng.random() < 0.5
                         else round(rng.uniform(0.0, 0.02), 4))
    components.sort(key=lambda k: (k.cycle, ORDER[k.task]))
    return components, points


# --- the Airflow crawl ----------------------------------------------------------------------------------------------


class Metadata:
    """Airflow's SQLite metadata database, read-only: what the soak watches while the API server may be down."""

    def __init__(self, path: Path, start: date) -> None:
        self.uri, self.start = f"file:{path}?mode=ro", start

    def _rows(self, sql: str) -> list[tuple]:
        try:
            with sqlite3.connect(self.uri, uri=True, timeout=10) as con:
                return con.execute(sql, [DAG_ID]).fetchall()
        except sqlite3.OperationalError:  # locked for a moment, or not created yet
            return []

    def started(self) -> set[tuple[int, str]]:
        """(cycle, task) of every task instance that has started, by the day of its run's data interval."""
        rows = self._rows("SELECT r.data_interval_start, t.task_id FROM task_instance t JOIN dag_run r "
                          "ON r.dag_id = t.dag_id AND r.run_id = t.run_id WHERE t.dag_id = ? "
                          "AND t.start_date IS NOT NULL")
        return {((date.fromisoformat(str(d)[:10]) - self.start).days + 1, task) for d, task in rows}

    def runs(self) -> list[tuple[str, str]]:
        """(day of the data interval, state) of every run of the crawl DAG."""
        return [(str(d)[:10], s) for d, s in self._rows("SELECT data_interval_start, state FROM dag_run "
                                                         "WHERE dag_id = ? ORDER BY data_interval_start")]

    def failed_tasks(self) -> list[str]:
        return [f"{d[:10]} {t}[{m}] {s} (try {n})" for d, t, m, s, n in self._rows(
            "SELECT r.data_interval_start, t.task_id, t.map_index, t.state, t.try_number FROM task_instance t "
            "JOIN dag_run r ON r.dag_id = t.dag_id AND r.run_id = t.run_id WHERE t.dag_id = ? "
            "AND t.state IN ('failed', 'upstream_failed')")]


def _plugins(folder: Path) -> Path:
    """A plugins folder holding the project's plugins and the soak's listener."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for plugin in (ROOT / "plugins").glob("*.py"):
        (folder / plugin.name).symlink_to(plugin)
    (folder / "soak_plugin.py").symlink_to(Path(__file__).with_name("soak_plugin.py"))
    return folder


def airflow_crawl(crawl: fault_run.Crawl, days: list[date], components: list[ComponentKill],
                  points: dict[str, tuple[tuple[str, int], float]], timeout: float,
                  progress: Callable[[str], None]) -> dict[str, Any]:
    """Crawl ``days`` under Airflow's scheduler (catchup from the first day), killing as the plan says; what the
    scheduler ran (its DAG runs) and how the kills went."""
    from crawlcycle.pipeline.stages import init

    shutil.rmtree(crawl.folder, ignore_errors=True)
    crawl.folder.mkdir(parents=True)
    write_toml(crawl.settings, crawl.config)
    init(crawl.settings)
    log = crawl.folder / "kills.jsonl"
    plan_file = crawl.folder / "plan.json"
    plan_file.write_text(json.dumps({"start": days[0].isoformat(), "log": str(log), "tasks": points}))
    home = crawl.folder / "airflow"
    stack = AirflowStack(home, port=free_port(), config=crawl.config, log=progress, env={
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(_plugins(crawl.folder / "plugins")), PLAN_ENV: str(plan_file)})
    stack.setup()
    metadata = Metadata(home / "airflow.db", days[0])
    fired: Counter = Counter()
    pending = list(components)
    t0 = time.monotonic()
    with stack:
        stack.start()
        stack.api("PATCH", f"/dags/{DAG_ID}", json={"is_paused": False})
        progress(f"Airflow up ({', '.join(COMPONENTS)}); the scheduler catches up {days[0]} .. {days[-1]}")
        seen = ""
        while True:
            runs = metadata.runs()
            if failed := [d for d, s in runs if s == "failed"]:
                raise RuntimeError(f"the run of {failed[0]} failed: {metadata.failed_tasks()}")
            done = sum(s == "success" for _, s in runs)
            if done == len(days) and not pending:
                break
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"{done} of {len(days)} runs done after {timeout:.0f} s")
            started = metadata.started()
            while pending and (pending[0].cycle, pending[0].task) in started:
                kill = pending.pop(0)
                stop_group(stack.components.pop(kill.component), signal.SIGKILL)
                fired[kill.component] += 1
                progress(f"killed the {kill.component} at cycle {kill.cycle}'s {kill.task}; restarting it in "
                         f"{kill.restart_after} s")
                time.sleep(kill.restart_after)
                stack.start_components({kill.component: (COMPONENTS[kill.component], {})})
            if (status := f"{done}/{len(days)} runs done, {sum(fired.values())} component kills") != seen:
                progress(status)
                seen = status
            time.sleep(0.5)
    task_kills = fault_run.read_jsonl(log)
    return {"runs": metadata.runs(), "components": dict(fired), "task_kills": task_kills,
            "missed": len(points) - len(task_kills), "seconds": round(time.monotonic() - t0)}


# --- the whole run ---------------------------------------------------------------------------------------------------


def soak_settings(settings: Settings, out: Path, cycles: int, today: date) -> Settings:
    """The crawl of the soak: the demo web of ``cycles`` days up to yesterday served on a free loopback port, the
    scheduler catching up from the first day, and retries for a task that meets more than one kill."""
    web_port, start = free_port(), today - timedelta(days=cycles)
    return replace(settings, data_dir=str(out / "web"), seeds_file=str(out / "web" / "demo-web" / "seeds.txt"),
                   query_log_dir=str(out / "web" / "demo-web" / "query_log"), demo_port=web_port,
                   connect_to=f"*.test=127.0.0.1:{web_port}", start_date=start.isoformat(),
                   end_date=(today - timedelta(days=1)).isoformat(), catchup=True, schedule="@daily",
                   task_retries=RETRIES, fetch_task_retries=RETRIES, task_retry_delay=2.0,
                   fetch_task_max_retry_delay=10.0).validate()


def soak(settings: Settings, out: Path, cycles: int, kills: int, seed: int, progress: Callable[[str], None] = print,
         today: date | None = None) -> dict[str, Any]:
    """A clean crawl of ``cycles`` days, then the same days under Airflow's scheduler with ``kills`` kills; compare."""
    base = soak_settings(settings, out, cycles, today or date.today())
    start = date.fromisoformat(base.start_date)
    days = [start + timedelta(days=k) for k in range(cycles)]

    def crawl(name: str) -> fault_run.Crawl:
        return fault_run.Crawl(out / name, replace(base, db_path=str(out / name / "crawl.duckdb"),
                                                   data_dir=str(out / name / "data")))

    clean, killed = crawl("clean"), crawl("airflow")
    t0 = time.monotonic()
    with start_web(base, clock=CrawlDate(clean.settings), days=cycles), _quiet("crawlcycle", "great_expectations"):
        tasks = fault_run.crawl_days(clean, days, fault_run.InProcess(), None, False, progress)
    components, points = soak_plan(tasks, kills, random.Random(seed))
    progress(f"clean crawl: {len(tasks)} tasks in {time.monotonic() - t0:.0f} s; {len(components)} component kills "
             f"and {len(points)} task kills planned")
    with start_web(base, clock=CrawlDate(killed.settings), days=cycles):
        ran = airflow_crawl(killed, days, components, points, timeout=600 + 240 * (cycles + kills),
                            progress=progress)
    by_target = Counter(ran["components"])
    for row in ran["task_kills"]:
        by_target["writer" if row["task"].split(":")[1] in WRITERS and row["in_transaction"] else "task"] += 1
    found = fault_run.compare(clean.settings, killed.settings, fault_run.AIRFLOW_RUN)
    result = {"cycles": cycles, "seed": seed, "kills": sum(by_target.values()), "by_target": dict(by_target),
              "in_transaction": sum(r["in_transaction"] for r in ran["task_kills"]), "missed": ran["missed"],
              "by_task": dict(Counter(r["task"].split(":")[1] for r in ran["task_kills"])),
              "runs": ran["runs"], "cycle_rows": _cycle_rows(killed.settings), **found,
              "seconds": round(time.monotonic() - t0), "airflow_seconds": ran["seconds"]}
    result["cycles_lost_or_doubled"] = _lost_or_doubled(result, days)
    (out / "result.json").write_text(json.dumps(result, indent=1, default=str))
    return result


@contextmanager
def _quiet(*loggers: str) -> Iterator[None]:
    """Only warnings from ``loggers`` while the block runs: the clean crawl's tasks run in this process, whose output
    is the soak's progress."""
    levels = {name: logging.getLogger(name).level for name in loggers}
    for name in loggers:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _cycle_rows(settings: Settings) -> list[tuple]:
    from crawlcycle.db import connect

    with connect(settings, read_only=True) as con:
        return con.execute("SELECT cycle, interval_start::VARCHAR, status FROM cycles ORDER BY cycle").fetchall()


def _lost_or_doubled(result: dict[str, Any], days: list[date]) -> list[str]:
    """What is wrong with the cycles: a day without its one successful DAG run and its one done cycle."""
    wanted = [d.isoformat() for d in days]
    problems = []
    if [d for d, s in result["runs"] if s == "success"] != wanted:
        problems.append(f"DAG runs {result['runs']} are not one success per day of {wanted[0]} .. {wanted[-1]}")
    if result["cycle_rows"] != [(k, d, "done") for k, d in enumerate(wanted, 1)]:
        problems.append(f"cycles {result['cycle_rows']} are not one done cycle per day, in order")
    return problems


def report_lines(result: dict[str, Any]) -> list[str]:
    """What a soak run found, for a terminal."""
    gaps = result["gaps"]
    return [f"kills survived: {result['kills']} over {result['cycles']} daily cycles scheduled by Airflow (seed "
            f"{result['seed']}); {result['in_transaction']} inside a DuckDB transaction, {result['missed']} task "
            "kill points not reached",
            "  by target: " + ", ".join(f"{k} {v}" for k, v in sorted(result["by_target"].items())),
            "  task kills by task: " + ", ".join(f"{k} {v}" for k, v in sorted(result["by_task"].items())),
            f"DAG runs: {sum(s == 'success' for _, s in result['runs'])} succeeded of {len(result['runs'])}; "
            f"cycles lost or doubled: {'; '.join(result['cycles_lost_or_doubled']) or 'none'}",
            f"tables equal to the clean crawl's: {result['tables'] - len(result['differ'])} of {result['tables']}",
            *(f"  {t} differs: {a} rows clean, {b} under Airflow" for t, (a, b) in result["differ"].items()),
            f"frontier URLs lost: {result['urls_lost']}, doubled: {result['urls_doubled']}",
            f"politeness: {gaps['short']} of {gaps['gaps']} request gaps shorter than min_delay",
            f"time: {result['seconds']} s in all, {result['airflow_seconds']} s under Airflow"]


def failed(result: dict[str, Any]) -> bool:
    return fault_run.failed(result) or bool(result["cycles_lost_or_doubled"])
