"""The distributed topology on one machine, without Docker: PostgreSQL (Airflow metadata) and Redis (Celery
broker) from Debian packages, Airflow with CeleryExecutor as separate processes (scheduler, API server,
DAG processor, triggerer), two general workers on the default queue and one writer worker on the writer
queue with one slot. Two demo cycles run through it; every task instance's worker is printed and checked.

Every process runs on loopback on a free port of its own, in its own process group, and is stopped when
the demo ends, fails or is interrupted. The crawl state lives in ``<home>/data``; the PostgreSQL and Redis
data in a private temporary folder removed afterwards.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

from crawlcycle.airflow.support import WORKER_NAME_ENV
from crawlcycle.devtools.airflow_stack import AirflowStack, stop_group
from crawlcycle.devtools.demo import ensure_demo_web, reset_crawl, start_web
from crawlcycle.pipeline.stages import init
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from crawlcycle.ui.report import cycle_summary

GENERAL_WORKERS = ("general1", "general2")
WRITER = "writer"
# Slots per general worker. With Celery's prefetch multiplier 1 (airflow.cfg) a worker holds at most this many
# tasks, so when a cycle's fetch shards are queued together (up to 4 in the demo) one worker cannot take them all.
GENERAL_CONCURRENCY = 2
PG_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/local/bin", "/usr/bin")
DB_USER = "airflow"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _find(name: str, dirs: tuple[str, ...] = ()) -> str | None:
    for d in dirs:
        if (Path(d) / name).is_file():
            return str(Path(d) / name)
    return shutil.which(name)


def ensure_packages(log: Callable[[str], None]) -> tuple[Path, str]:
    """(PostgreSQL bin folder, redis-server): installed from Debian packages with apt-get when missing."""
    missing = [pkg for pkg, found in (("postgresql", _find("initdb", PG_DIRS)), ("redis-server", _find("redis-server")))
               if not found]
    if missing:
        if os.geteuid():
            raise RuntimeError(f"install {' '.join(missing)} (apt-get install {' '.join(missing)}), then run again")
        log(f"installing {', '.join(missing)} with apt-get")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(["apt-get", "install", "-y", "-q", *missing], env=env, capture_output=True).returncode:
            subprocess.run(["apt-get", "update", "-q"], env=env, check=True, capture_output=True)
            subprocess.run(["apt-get", "install", "-y", "-q", *missing], env=env, check=True, capture_output=True)
    initdb, redis = _find("initdb", PG_DIRS), _find("redis-server")
    if not initdb or not redis:
        raise RuntimeError("initdb or redis-server not found after installing postgresql and redis-server")
    return Path(initdb).resolve().parent, redis


def _wait(check: Callable[[], object], what: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}")
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.5)
    raise TimeoutError(f"{what} did not come up in {timeout:.0f}s")


@contextlib.contextmanager
def postgres(bin_dir: Path, port: int, data: Path, log: Callable[[str], None]) -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1:``port`` with an empty ``airflow`` database; yields its SQLAlchemy URL.
    PostgreSQL refuses to run as root, so as root it runs as the ``postgres`` account the package creates."""
    import psycopg2

    user = "postgres" if os.geteuid() == 0 else getpass.getuser()
    data.mkdir(mode=0o700)
    shutil.chown(data, user)
    run_as = {"user": user, "cwd": data}
    subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust", "-E", "UTF8",
                    "--no-sync"], check=True, capture_output=True, **run_as)
    out = open(data / "server.log", "ab")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                             "-k", str(data), "-c", "fsync=off"], stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True, **run_as)
    try:
        connect = lambda db: psycopg2.connect(host="127.0.0.1", port=port, user=DB_USER, dbname=db)  # noqa: E731
        _wait(lambda: connect("postgres").close() or True, "postgres", proc)
        con = connect("postgres")
        con.autocommit = True
        con.cursor().execute("CREATE DATABASE airflow")
        con.close()
        log(f"PostgreSQL on 127.0.0.1:{port} (data {data})")
        yield f"postgresql+psycopg2://{DB_USER}@127.0.0.1:{port}/airflow"
    finally:
        stop_group(proc, signal.SIGINT)  # SIGINT: fast shutdown, clients disconnected


@contextlib.contextmanager
def redis_server(exe: str, port: int, data: Path, log: Callable[[str], None]) -> Iterator[str]:
    """A Redis server on 127.0.0.1:``port`` without persistence; yields its URL."""
    import redis

    data.mkdir()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(data), "--logfile", str(data / "redis.log")], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: redis.Redis(port=port).ping(), "redis-server", proc)
        log(f"Redis on 127.0.0.1:{port}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_group(proc)


def celery_env(db_url: str, broker_url: str, trigger_log_port: int, log_port: int) -> dict[str, str]:
    """Airflow settings for CeleryExecutor with PostgreSQL metadata (on top of airflow.cfg)."""
    env = {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": db_url,
        "AIRFLOW__CELERY__BROKER_URL": broker_url,
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + db_url,
        "AIRFLOW__CELERY__OPERATION_TIMEOUT": "10",  # as in docker/docker-compose.yml
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(trigger_log_port),
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(log_port),
    }
    return env


def components(settings: Settings) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Airflow's processes: name -> (arguments of ``airflow``, extra environment). Each worker has its own log
    server port and reports its name as the task instances' hostname."""

    def worker(name: str, queue: str, concurrency: int) -> tuple[list[str], dict[str, str]]:
        return (["celery", "worker", "--queues", queue, "--concurrency", str(concurrency),
                 "--celery-hostname", f"{name}@%h"],
                {WORKER_NAME_ENV: name, "AIRFLOW__CORE__HOSTNAME_CALLABLE": "crawlcycle.airflow.support.worker_name",
                 "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port())})

    return {
        "scheduler": (["scheduler"], {}),
        "api-server": (["api-server"], {}),
        "dag-processor": (["dag-processor"], {}),
        "triggerer": (["triggerer"], {}),
        **{name: worker(name, "default", GENERAL_CONCURRENCY) for name in GENERAL_WORKERS},
        WRITER: worker(WRITER, settings.writer_queue, 1),
    }


def wait_for_workers(stack: AirflowStack, names: list[str], timeout: float = 120) -> None:
    """Wait until each Celery worker logged that it is ready to take tasks."""
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in list(pending):
            if stack.components[name].poll() is not None:
                raise RuntimeError(f"worker {name} exited; see {stack.home / f'{name}.log'}")
            if f"{name}@" in (text := (stack.home / f"{name}.log").read_text(errors="replace")) and " ready." in text:
                pending.discard(name)
        time.sleep(1)
    if pending:
        raise TimeoutError(f"workers {', '.join(sorted(pending))} not ready after {timeout:.0f}s")


def assignment(stack: AirflowStack, runs: list[dict]) -> list[dict]:
    """One row per task instance: run, task, map index, queue, worker (hostname) and state."""
    return [{"run": run["dag_run_id"], "task": ti["task_id"], "map_index": ti["map_index"], "queue": ti["queue"],
             "worker": ti["hostname"], "state": ti["state"]}
            for run in runs
            for ti in sorted(stack.task_instances(run["dag_run_id"]), key=lambda t: (t["start_date"] or "",
                                                                                    t["map_index"]))]


def check_assignment(rows: list[dict], writer_queue: str) -> list[str]:
    """What breaks the topology: failed tasks, fetch shards not spread over both general workers, a DuckDB
    task off the writer or a shard task on it. Empty when all is well."""
    problems = [f"{r['task']}[{r['map_index']}] of {r['run']} is {r['state']}" for r in rows if r["state"] != "success"]
    shard_tasks = {"fetch", "parse"}
    fetch_workers = {r["worker"] for r in rows if r["task"] == "fetch"}
    if fetch_workers != set(GENERAL_WORKERS):
        problems.append(f"fetch shards ran on {sorted(fetch_workers)}, not on both of {list(GENERAL_WORKERS)}")
    problems += [f"{r['task']} ran on {r['worker']} (queue {r['queue']}), not on {WRITER} ({writer_queue})"
                 for r in rows if r["task"] not in shard_tasks and (r["worker"], r["queue"]) != (WRITER, writer_queue)]
    problems += [f"{r['task']}[{r['map_index']}] ran on {r['worker']}" for r in rows
                 if r["task"] in shard_tasks and r["worker"] not in GENERAL_WORKERS]
    return problems


def format_table(rows: list[dict]) -> str:
    header = ("run", "task", "shard", "queue", "worker")
    lines = [(r["run"], r["task"], "" if r["map_index"] < 0 else str(r["map_index"]), r["queue"], r["worker"])
             for r in rows]
    widths = [max(len(x) for x in col) for col in zip(header, *lines, strict=True)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)) for line in [header, *lines])


def demo_settings(settings: Settings, home: Path, web_port: int) -> Settings:
    """The demo's settings with its crawl state under ``home`` and the demo web on ``web_port``."""
    data = home / "data"
    return replace(settings, data_dir=str(data), db_path=str(data / "crawl.duckdb"),
                   seeds_file=str(data / "demo-web" / "seeds.txt"), query_log_dir=str(data / "demo-web" / "query_log"),
                   demo_port=web_port, connect_to=f"*.test=127.0.0.1:{web_port}")


def run_celery_demo(settings: Settings, home: Path, cycles: int = 2,
                    log: Callable[[str], None] | None = None) -> dict:
    """Run ``cycles`` demo cycles under CeleryExecutor; print and return the worker of every task instance and each
    cycle's gate seconds (``{"rows": [...], "problems": [...], "seconds": float, "gates": [str, ...]}``)."""
    t0 = time.monotonic()
    say = log or (lambda m: print(f"[celery-demo {time.monotonic() - t0:5.0f}s] {m}", flush=True))
    bin_dir, redis_exe = ensure_packages(say)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    settings = demo_settings(settings, home, free_port())
    warc = ensure_demo_web(settings)
    reset_crawl(settings)
    say(f"demo web {warc} on http://127.0.0.1:{settings.demo_port}; {init(settings)['seeds']} seed URLs")
    task_config = home / "settings.toml"  # what the tasks load: the settings of this command
    write_toml(settings, task_config)
    with contextlib.ExitStack() as stack_of:  # exits in reverse: Airflow, web, Redis, PostgreSQL, their data
        tmp = Path(stack_of.enter_context(tempfile.TemporaryDirectory(prefix="crawlcycle-services-")))
        tmp.chmod(0o755)  # the postgres account reaches its data folder inside
        db_url = stack_of.enter_context(postgres(bin_dir, free_port(), tmp / "pg", say))
        broker = stack_of.enter_context(redis_server(redis_exe, free_port(), tmp / "redis", say))
        stack_of.enter_context(start_web(settings))
        airflow = AirflowStack(home / "airflow", port=free_port(), config=task_config,
                               log=lambda m: say(f"airflow: {m}"),
                               env=celery_env(db_url, broker, free_port(), free_port()))
        airflow.setup()
        stack_of.enter_context(airflow)
        procs = components(settings)
        say(f"starting Airflow (CeleryExecutor): {', '.join(procs)}; API on {airflow.url}")
        airflow.start_components(procs)
        wait_for_workers(airflow, [*GENERAL_WORKERS, WRITER])
        first = date.fromisoformat(settings.start_date)
        last = first + timedelta(days=cycles - 1)
        say(f"workers ready; backfilling crawl_cycle {first} .. {last}")
        airflow.backfill(first.isoformat(), last.isoformat())
        runs = airflow.wait_for_runs(cycles, timeout=300 * cycles)
        rows = assignment(airflow, runs)
        say("all runs succeeded; stopping Airflow, Redis and PostgreSQL")
    problems = check_assignment(rows, settings.writer_queue)
    seconds = round(time.monotonic() - t0, 1)
    print(format_table(rows), flush=True)
    fetches = {w: sum(1 for r in rows if r["task"] == "fetch" and r["worker"] == w) for w in GENERAL_WORKERS}
    print(f"fetch shards per worker: {fetches}; DuckDB tasks on {WRITER}: "
          f"{sum(1 for r in rows if r['worker'] == WRITER)}; {seconds} s in all", flush=True)
    # the workers imported GX before forking (crawlcycle.airflow.celery_config): a gate task imports it no more
    gates = cycle_summary(settings)["gates"].to_list()
    print(f"quality gates per cycle: {'; '.join(gates)}", flush=True)
    for p in problems:
        print(f"PROBLEM: {p}", flush=True)
    return {"rows": rows, "problems": problems, "seconds": seconds, "gates": gates}
