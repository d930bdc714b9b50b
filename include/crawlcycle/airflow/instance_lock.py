"""One Airflow per crawl: a start claims its Airflow home and its port before any Airflow process runs.

Two schedulers on one SQLite metadata database run each other's tasks and lock each other out, and a second API
server on a busy port fails only in its own log while the first one's UI keeps serving the other crawl. So a start
refuses, in one line, when

- another ``crawlcycle`` Airflow holds the home's lock (``<home>/instance.lock``, an ``flock`` every Airflow
  process it starts inherits, so the lock lasts as long as the last of them, even if the command was killed),
- something listens on the port,
- or a scheduler not started by crawlcycle beats on the home's metadata database (its ``job`` row's heartbeat is
  younger than the scheduler's health-check threshold).

The lock file names the holder (its pid, port and settings file): ``crawlcycle airflow-env`` reads the port of the
instance that runs.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil

from crawlcycle.contracts.errors import InputError

LOCK_NAME = "instance.lock"
HEARTBEAT_SECONDS = 30  # [scheduler] scheduler_health_check_threshold: a younger heartbeat is a live scheduler


class AirflowBusy(InputError):
    """The Airflow home or the port is in use."""


@dataclass(frozen=True)
class Holder:
    pid: int
    port: int
    config: str | None


def running(home: Path) -> Holder | None:
    """The crawlcycle Airflow running on ``home``, or None."""
    path = home / LOCK_NAME
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder(path)
        return None
    finally:
        os.close(fd)


def claim(home: Path, port: int, config: Path | None, metadata: str | None) -> int:
    """Lock ``home`` for this process and the Airflow processes it starts (the descriptor is inheritable: pass it
    to them); raise AirflowBusy, having created nothing, naming what holds the home, the port or the metadata
    database. ``metadata`` is the SQLite file of the metadata database (None for another database: its schedulers
    are not checked)."""
    if held := running(home):
        raise _busy(home, held)
    if listener := _listening(port):
        raise AirflowBusy(f"--port {port}: 127.0.0.1:{port} is in use{listener}; stop what listens there or "
                          "pass another --port")
    home.mkdir(parents=True, exist_ok=True)
    path = home / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # started in the moment since the look above
            raise _busy(home, _holder(path)) from None
        if metadata and (beat := _scheduler_heartbeat(Path(metadata))):
            raise AirflowBusy(f"{metadata}: a scheduler started outside crawlcycle uses this metadata database "
                              f"({beat}); stop it first (a scheduler killed less than {HEARTBEAT_SECONDS} s ago "
                              "counts until then)")
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "port": port, "config": str(config) if config else None}).encode())
        os.set_inheritable(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _busy(home: Path, held: Holder | None) -> AirflowBusy:
    by = f" (pid {held.pid}, UI on port {held.port}, settings {held.config})" if held else ""
    if held and not psutil.pid_exists(held.pid):  # the command was killed; the processes it started were not
        pids = " ".join(str(p) for p in sorted(_lock_holders(home / LOCK_NAME)))
        return AirflowBusy(f"{home}: Airflow still runs on this crawl{by}, though the command that started it is "
                           f"gone; `kill {pids}` stops its processes")
    return AirflowBusy(f"{home}: Airflow already runs on this crawl{by}; stop it first (Ctrl-C where it was "
                       "started), or use the one that runs")


def _lock_holders(path: Path) -> set[int]:
    """The processes that hold ``path`` open (Linux's /proc)."""
    pids = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        with contextlib.suppress(OSError):
            if fd.readlink() == path:
                pids.add(int(fd.parts[2]))
    return pids


def _holder(path: Path) -> Holder | None:
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads(path.read_text())
        return Holder(int(data["pid"]), int(data["port"]), data["config"])
    return None


def _scheduler_heartbeat(db: Path) -> str | None:
    """'host H, heartbeat N s ago' of a running scheduler job whose heartbeat is recent, else None."""
    if not db.is_file():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'job'").fetchone():
            return None  # not migrated yet: no scheduler ever ran on it
        rows = con.execute("SELECT hostname, latest_heartbeat FROM job "
                           "WHERE job_type = 'SchedulerJob' AND state = 'running'").fetchall()
    now = datetime.now(UTC).replace(tzinfo=None)
    for host, beat in rows:  # Airflow keeps UTC times
        age = (now - datetime.fromisoformat(beat).replace(tzinfo=None)).total_seconds()
        if age < HEARTBEAT_SECONDS:
            return f"host {host}, heartbeat {age:.0f} s ago"
    return None


def _listening(port: int) -> str | None:
    """'' or ' by pid N (command)' when a socket listens on the port of 127.0.0.1 (or of every address); None when
    the port is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT is no listener
        try:
            s.bind(("127.0.0.1", port))
            return None
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    with contextlib.suppress(psutil.Error):
        for c in psutil.net_connections("tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.pid:
                return f" by pid {c.pid} ({' '.join(psutil.Process(c.pid).cmdline()[:3])})"
    return ""
