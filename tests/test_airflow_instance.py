"""One Airflow per crawl, every server on loopback: `crawlcycle airflow` as a user starts it, then a second start on
the same crawl, on a busy port, and on a metadata database a scheduler of its own uses is refused in one line before
any Airflow process starts; `airflow-env` gives the running instance's port, Airflow's CLI runs without the graphviz
warning, and a typo in the settings file shows in the UI's banner of import errors. A killed `crawlcycle airflow`
leaves its Airflow running, which still holds the crawl."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from crawlcycle.devtools.airflow_stack import AirflowStack, stop_group
from crawlcycle.settings.sources import load_settings, write_toml
from tests.support.cli import EXE, run_cli
from tests.support.demo import USER_AGENT
from tests.support.net import free_port, port_open

pytestmark = pytest.mark.airflow

LOOPBACK = ("127.0.0.1", "::1")
# a user's shell: no Airflow or crawlcycle settings of the test run
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWLCYCLE_", "AIRFLOW"))}


def _crawl(folder: Path) -> Path:
    """A crawl of its own in ``folder`` (settings file, seeds, an initialised database); its settings file."""
    folder.mkdir()
    (folder / "seeds.txt").write_text("http://a.demo.test/\n")
    settings = load_settings(environ={}, overrides={
        "db_path": str(folder / "crawl.duckdb"), "data_dir": str(folder / "data"), "user_agent": USER_AGENT,
        "seeds_file": str(folder / "seeds.txt")})
    write_toml(settings, folder / "crawlcycle.toml")
    assert run_cli("init", config=folder / "crawlcycle.toml").returncode == 0
    return folder / "crawlcycle.toml"


def _start(config: Path, port: int) -> subprocess.Popen:
    """`crawlcycle airflow --config ... --port ...` in the background, once it says the UI is up."""
    proc = subprocess.Popen([EXE, "airflow", "--config", str(config), "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=ENV)
    lines = []
    for line in proc.stdout:  # type: ignore[union-attr]
        lines.append(line)
        if line.startswith("Airflow UI:"):
            return proc
    raise AssertionError("".join(lines))


def _descendants(proc: subprocess.Popen) -> set[int]:
    return {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}


def _airflow_started_since(t: float, running: subprocess.Popen) -> list[str]:
    """The command lines of Airflow processes started since ``t`` (time.time()) but by the Airflow that runs (its
    DAG processor forks a process per parse)."""
    own = _descendants(running)
    found = []
    for p in psutil.process_iter(["cmdline", "create_time"]):
        line = " ".join(p.info["cmdline"] or [])
        if p.info["create_time"] >= t and "airflow" in line and "pytest" not in line and p.pid not in own:
            found.append(line)
    return found


def _refused(res: subprocess.CompletedProcess, *words: str) -> str:
    assert res.returncode == 2 and "Traceback" not in res.stderr, (res.returncode, res.stdout, res.stderr)
    (line,) = res.stderr.splitlines()
    assert all(w in line for w in words), line
    return line


def _heartbeat(db: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(db) as con:
                if con.execute("SELECT count(*) FROM job WHERE job_type = 'SchedulerJob' AND state = 'running'"
                               ).fetchone()[0]:
                    return
        except sqlite3.OperationalError:
            pass
        time.sleep(1)
    raise AssertionError("the scheduler never beat")


def test_a_second_airflow_is_refused_before_it_starts_and_every_server_listens_on_loopback(tmp_path: Path) -> None:
    first, other = _crawl(tmp_path / "first"), _crawl(tmp_path / "other")
    home, port = first.parent / ".airflow", free_port()
    proc = _start(first, port)
    try:
        running, t = _descendants(proc), time.time()
        # the same crawl on its port or another one, and another crawl on the busy port
        _refused(run_cli("airflow", "--port", str(port), config=first), str(home), "already runs on this crawl",
                 f"port {port}")
        _refused(run_cli("airflow", "--port", str(free_port()), config=first), "already runs on this crawl")
        _refused(run_cli("airflow", "--port", str(port), config=other), f"127.0.0.1:{port} is in use")
        assert not _airflow_started_since(t, proc) and not (other.parent / ".airflow").exists()

        exports = run_cli("airflow-env", config=first).stdout
        assert f"export AIRFLOW__API__PORT='{port}'" in exports, exports
        assert f"http://127.0.0.1:{port}/execution/" in exports

        listening = {(c.laddr.ip, c.laddr.port) for c in psutil.net_connections("inet")
                     if c.status == psutil.CONN_LISTEN and c.pid in running}
        assert ("127.0.0.1", port) in listening
        assert all(ip in LOOPBACK for ip, _ in listening), listening

        shell = subprocess.run(["bash", "-ec", f"eval \"$({EXE} airflow-env --config {first})\"; "
                                f"{Path(EXE).with_name('airflow')} dags list -o plain"],
                               capture_output=True, text=True, env=ENV, timeout=300)
        assert shell.returncode == 0 and "crawl_cycle" in shell.stdout, shell.stderr
        assert "graphviz" not in shell.stderr, shell.stderr
        # a typo in the settings file: the UI's banner of import errors names the file, the setting and the reason,
        # and crawl_cycle stays
        text = first.read_text()
        first.write_text(text.replace("[storage]\n", "[storage]\nper_host_cpa = 3\n"))
        stack = AirflowStack(home, port=port, log=lambda m: None)
        deadline, errors = time.monotonic() + 180, []
        while not errors and time.monotonic() < deadline:
            time.sleep(3)
            errors = stack.api("GET", "/importErrors")["import_errors"]
        (error,) = errors
        assert error["filename"].endswith("settings_check.py"), error
        assert f"setting per_host_cpa: unknown setting (from file {first})" in error["stack_trace"], error
        assert not stack.api("GET", "/dags/crawl_cycle")["is_stale"]
        first.write_text(text)

        # the command killed, Airflow's processes live on: still refused, with the command that stops them
        proc.kill()
        proc.wait()
        line = _refused(run_cli("airflow", "--port", str(free_port()), config=first), "still runs on this crawl")
        (kill,) = re.findall(r"`(kill [\d ]+)`", line)
        assert set(map(int, kill.split()[1:])) <= running
        subprocess.run(kill.split(), check=True)
        deadline = time.monotonic() + 120
        while port_open(port) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        for pid in [proc.pid, *running]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not port_open(port)

    # a scheduler started by hand on the crawl's metadata database (with airflow-env), not by crawlcycle
    scheduler = subprocess.Popen(["bash", "-ec", f"eval \"$({EXE} airflow-env --config {first})\"; exec "
                                  f"{Path(EXE).with_name('airflow')} scheduler --skip-serve-logs"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
                                 start_new_session=True)
    try:
        _heartbeat(home / "airflow.db")
        _refused(run_cli("airflow", "--port", str(free_port()), config=first), str(home / "airflow.db"),
                 "a scheduler started outside crawlcycle")
    finally:
        stop_group(scheduler)
