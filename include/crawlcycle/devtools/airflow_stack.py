"""Run the project's Airflow from a script: its components (scheduler with the LocalExecutor, API server, DAG
processor, triggerer; SQLite metadata) each in a process group of its own, for ``crawlcycle airflow``, the demo and
the end-to-end tests, or the components a caller names (``start_components``) for the Celery demo.

Not ``airflow standalone``: it starts the scheduler's and the triggerer's log servers, which listen on every address
(Airflow binds them to all interfaces, with no setting). On one machine the API server reads the task logs from the
files themselves, so they are not started, and every server listens on loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import requests

from crawlcycle.airflow import instance_lock
from crawlcycle.airflow.environment import CONN_ENV, DAG_ID, airflow_env
from crawlcycle.airflow.support import DUCKDB_POOL

ADMIN = ("admin", "admin")
# What `airflow standalone` runs, less the log servers (see above).
COMPONENTS = {"scheduler": ["scheduler", "--skip-serve-logs"], "dag-processor": ["dag-processor"],
              "api-server": ["api-server"], "triggerer": ["triggerer", "--skip-serve-logs"]}


class AirflowStack:
    """Airflow's components each in its own process group, with helpers to backfill and wait for runs. ``env``
    overrides the Airflow settings of every process (executor, metadata DB, ...). The first setup or start claims
    the home and the port (``instance_lock``) and refuses if another Airflow holds either."""

    def __init__(self, home: Path, port: int = 8080, config: Path | None = None,
                 log: Callable[[str], None] = print, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.port = port
        self.config = config
        self.env = {**os.environ, **airflow_env(home, port, config), **(env or {})}
        # Airflow's own processes start `airflow ...` found on PATH.
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"
        # Scheduler and API server must sign and check task tokens with one secret.
        self.env.setdefault("AIRFLOW__API_AUTH__JWT_SECRET", secrets.token_hex(32))
        self.log = log
        self.components: dict[str, subprocess.Popen] = {}
        self._token: str | None = None
        self._lock: int | None = None

    def claim(self) -> None:
        """Claim the home and the port for this stack (once); raise instance_lock.AirflowBusy if either is taken."""
        if self._lock is None:
            conn = self.env[CONN_ENV]
            sqlite = conn.removeprefix("sqlite:///") if conn.startswith("sqlite:///") else None
            self._lock = instance_lock.claim(self.home, self.port, self.config, sqlite)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def airflow(self, *args: str, check: bool = True, attempts: int = 5, errors: bool = False) -> str:
        """Run an Airflow CLI command; its output (with ``errors``: its error output if it failed, else "").
        A running scheduler holds the SQLite metadata file's write lock in bursts, so a command that fails with
        "database is locked" is retried (its transaction was rolled back)."""
        exe = Path(sys.executable).with_name("airflow")
        for attempt in range(1, attempts + 1):
            res = subprocess.run([str(exe), *args], env=self.env, capture_output=True, text=True, timeout=300)
            if not res.returncode or "database is locked" not in res.stderr or attempt == attempts:
                break
            self.log(f"airflow {args[0]}: metadata database locked, retrying ({attempt}/{attempts})")
            time.sleep(2 * attempt)
        if check and res.returncode:
            raise RuntimeError(f"airflow {' '.join(args)} failed ({res.returncode}): {res.stderr[-2000:]}")
        if errors:
            return res.stderr if res.returncode else ""
        return res.stdout

    def setup(self, fresh: bool = False) -> None:
        """Create or migrate the metadata DB, the admin login (unless one was written before: it may have been
        changed) and the one-slot DuckDB pool (``fresh``: from nothing)."""
        self.claim()
        if fresh:  # all but the lock this stack holds
            for path in self.home.iterdir():
                if path.name != instance_lock.LOCK_NAME:
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
        if not (self.home / "passwords.json").exists():
            (self.home / "passwords.json").write_text(json.dumps({ADMIN[0]: ADMIN[1]}))
        self.airflow("db", "migrate")
        self.airflow("pools", "set", DUCKDB_POOL, "1", "crawl database: one open at a time")

    def start(self, timeout: float = 240) -> None:
        """Start the scheduler, DAG processor, API server and triggerer, each logging to ``<home>/<name>.log``."""
        self.start_components({name: (args, {}) for name, args in COMPONENTS.items()}, timeout)

    @property
    def running(self) -> bool:
        """Every started Airflow process is still up."""
        return bool(self.components) and all(p.poll() is None for p in self.components.values())

    def start_components(self, components: dict[str, tuple[list[str], dict[str, str]]], timeout: float = 240) -> None:
        """Start ``airflow <args>`` for each name -> (args, extra environment), each in its own process group
        logging to ``<home>/<name>.log``; return once the API answers and knows the DAG. Each inherits the
        home's lock: it is held while any of them lives."""
        self.claim()
        exe = Path(sys.executable).with_name("airflow")
        for name, (args, extra) in components.items():
            out = open(self.home / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the process
            self.components[name] = subprocess.Popen([str(exe), *args], env={**self.env, **extra}, stdout=out,
                                                     stderr=subprocess.STDOUT, start_new_session=True,
                                                     pass_fds=(self._lock,))
        self._wait_ready(self.components, timeout)

    def _wait_ready(self, procs: dict[str, subprocess.Popen], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"airflow {name} exited; see {self.home / f'{name}.log'}")
            try:
                if requests.get(f"{self.url}/api/v2/monitor/health", timeout=2).ok and self._dag_known():
                    return
            except requests.RequestException:
                pass
            time.sleep(2)
        raise TimeoutError(f"Airflow did not come up in {timeout:.0f}s; see the logs in {self.home}")

    def stop(self, grace: float = 30) -> None:
        """Stop every started process group; a process still running after ``grace`` seconds is killed (a
        scheduler left behind would hold its log-server port against the next start)."""
        for proc in self.components.values():
            stop_group(proc, grace=grace)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> AirflowStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def api(self, method: str, path: str, **kwargs: object) -> dict:
        if not self._token:
            r = requests.post(f"{self.url}/auth/token", json={"username": ADMIN[0], "password": ADMIN[1]}, timeout=30)
            r.raise_for_status()
            self._token = r.json()["access_token"]
        r = requests.request(method, f"{self.url}/api/v2{path}", headers={"Authorization": f"Bearer {self._token}"},
                             timeout=30, **kwargs)
        r.raise_for_status()
        return r.json()

    def _dag_known(self) -> bool:
        try:
            self.api("GET", f"/dags/{DAG_ID}")
            return True
        except requests.HTTPError:
            return False

    def backfill(self, from_date: str, to_date: str, reprocess: bool = False, timeout: float = 120) -> None:
        """Create backfill runs, one at a time in date order (a backfill does not follow the DAG's
        max_active_runs); the DAG is unpaused, since the scheduler runs no task of a paused DAG.

        ``reprocess`` runs intervals whose runs already succeeded again: Airflow clears those runs and
        queues them under their old run ids. Airflow allows one unfinished backfill per DAG and the
        scheduler marks a finished one complete only every 30 s, so this first waits (up to ``timeout``)
        for earlier backfills to be marked complete."""
        self.api("PATCH", f"/dags/{DAG_ID}", json={"is_paused": False})
        deadline = time.monotonic() + timeout
        while self._backfill_running():
            if time.monotonic() > deadline:
                raise TimeoutError(f"an earlier backfill of {DAG_ID} was not complete after {timeout:.0f}s")
            time.sleep(2)
        reprocess_args = ["--reprocess-behavior", "completed"] if reprocess else []
        args = ("backfill", "create", "--dag-id", DAG_ID, "--from-date", from_date, "--to-date", to_date,
                "--max-active-runs", "1", *reprocess_args)
        for attempt in range(1, 6):
            error = self.airflow(*args, attempts=1, check=False, errors=True)
            # "database is locked" may come after the backfill was stored: retrying that would be refused
            if not error or self._backfill_running():
                return
            if "database is locked" not in error or attempt == 5:
                raise RuntimeError(f"airflow {' '.join(args)} failed: {error[-2000:]}")
            time.sleep(2 * attempt)

    def _backfill_running(self) -> bool:
        return any(b["completed_at"] is None
                   for b in self.api("GET", "/backfills", params={"dag_id": DAG_ID})["backfills"])

    def runs(self, dag_id: str = DAG_ID) -> list[dict]:
        return self.api("GET", f"/dags/{dag_id}/dagRuns", params={"order_by": "logical_date"})["dag_runs"]

    def wait_for_runs(self, count: int, timeout: float) -> list[dict]:
        """Wait until ``count`` runs succeeded; raise as soon as one fails, naming its failed tasks. A poll the API
        server is too busy to answer in time (a loaded machine, its SQLite database locked by a task) is polled
        again."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            try:
                runs = self.runs()
            except requests.Timeout:
                continue
            for run in runs:
                if run["state"] == "failed":
                    raise RuntimeError(f"run {run['dag_run_id']} failed: {self.failed_tasks(run['dag_run_id'])}")
            done = [r for r in runs if r["state"] == "success"]
            status = f"{len(done)}/{count} runs done"
            if status != seen:
                self.log(status)
                seen = status
            if len(done) >= count:
                return done
            time.sleep(3)
        raise TimeoutError(f"{count} runs did not finish in {timeout:.0f}s")

    def failed_tasks(self, run_id: str) -> list[str]:
        tis = self.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return [t["task_id"] for t in tis if t["state"] in ("failed", "upstream_failed")]

    def task_instances(self, run_id: str) -> list[dict]:
        return self.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances",
                        params={"limit": 1000})["task_instances"]


def run_until_stopped(stack: AirflowStack) -> int:
    """Start Airflow (its metadata database created, or migrated to the installed Airflow) and keep it running until
    Ctrl-C or SIGTERM, which stop it (0); 1 if it exits by itself."""
    with stack:
        stack.claim()  # before anything starts: refused while another Airflow holds the home or the port
        stack.setup()
        stack.start()
        print(f"Airflow UI: {stack.url}  (login {ADMIN[0]} / {ADMIN[1]}); logs in {stack.home}.  Ctrl-C stops it.",
              flush=True)
        try:
            while stack.running:
                time.sleep(1)
        except KeyboardInterrupt:  # the way it is meant to stop (Ctrl-C, or SIGTERM: see crawlcycle.cli.main)
            return 0
        exited = [name for name, proc in stack.components.items() if proc.poll() is not None]
    print(f"Airflow's {', '.join(exited)} exited; see {stack.home}/{exited[0]}.log", file=sys.stderr)
    return 1


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 30) -> None:
    """Send ``sig`` to the process group ``proc`` leads (started with ``start_new_session``) and wait for every
    member to exit; kill those still running after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (proc.poll() is None or _group_members(proc.pid)):
        time.sleep(0.2)
    for p in _group_members(proc.pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    proc.wait()


def _group_members(pgid: int) -> list[psutil.Process]:
    """Running (not zombie) processes of process group ``pgid``."""
    members = []
    for p in psutil.process_iter(["status"]):
        with contextlib.suppress(psutil.NoSuchProcess, ProcessLookupError):
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(p)
    return members
