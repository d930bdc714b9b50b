"""The fault-injection run (``crawlcycle fault-run``): crawl the same cycles twice, once straight through and once
with the working process SIGKILLed at seeded random points, each killed task retried as Airflow retries it (or,
with ``retry="cycle"``, the whole cycle run again as ``crawlcycle cycle --date`` would); then compare every table.

Each task runs in a worker process of its own, as under Airflow; a worker is started ahead of its task, so the
imports are not counted in the run's time. A worker counts the *events* of its task: calls into DuckDB, file
writes, renames and removals, Parquet writes and socket sends. The straight run records each task's count; the
killed run picks a task and an event number from the seed and the worker SIGKILLs itself right before that
event, or a few milliseconds into it (inside a DuckDB statement, a COMMIT, a write). ``kills.jsonl`` says where
each kill landed (task, event, the product's code line, and whether a DuckDB transaction was open).

Tables are compared as ``table_digest.table_rows`` gives them: wall-clock columns out, and of ``fetch_requests``
the requests of each host's last attempt (a killed fetch's requests reached their servers, so they are kept, under
a lower ``attempt``; the politeness check reads them all).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from crawlcycle.pipeline.stage_order import SHARD, STAGE_ORDER, TASKS
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings, with_overrides, write_toml

_OS_EVENTS = {os.replace, os.rename, os.unlink, os.rmdir, os.mkdir, os.fsync, os.truncate}
_TASK_TIMEOUT = 1800  # seconds: a worker that hangs (a deadlock after a kill) fails the run rather than stall it


@dataclass
class Task:
    """One task instance of a cycle: ``task`` of STAGE_ORDER, on ``shard`` (the shard's index) for a shard task."""

    cycle: int       # 1-based position of the cycle in the run
    task: str
    shard: int | None = None
    events: dict[str, int] = field(default_factory=dict)  # by kind (duckdb, file, os, ...), in the straight run

    @property
    def key(self) -> str:
        return f"{self.cycle}:{self.task}" + (f"[{self.shard}]" if self.shard is not None else "")


@dataclass
class Tally:
    kills: int = 0
    missed: int = 0            # the task ended before its kill point
    in_transaction: int = 0
    by_task: Counter = field(default_factory=Counter)
    by_event: Counter = field(default_factory=Counter)


# --- the worker: one task in its own process, killed at its event number --------------------------------------


def _event(fn: object) -> str | None:
    """The kind of event a C call is, or None if it is not one the kill switch counts."""
    owner = getattr(fn, "__self__", None)
    kind = owner.__name__ if isinstance(owner, ModuleType) else type(owner).__module__
    name = getattr(fn, "__name__", "")
    if fn in _OS_EVENTS:
        return f"os.{name}"
    if kind == "_io" and name in ("write", "flush"):
        return "file.write"
    if type(owner).__name__ == "PyDataFrame" and name.startswith("write_"):
        return f"polars.{name}"
    if type(owner).__name__ == "socket" and name in ("sendall", "send", "connect"):
        return f"socket.{name}"
    return None


_PRODUCT = Path(__file__).resolve().parents[1]  # the crawlcycle package
# What runs the stages rather than being them: the harness, the Airflow glue (a task process forked by the executor
# holds its frames below the task's) and the command line.
_RUNNERS = tuple(str(_PRODUCT / part) for part in ("devtools", "airflow", "cli.py"))


def _in_product(frame: Any) -> bool:
    """Whether the stages' own code (the package, what runs it aside) is on the stack of ``frame``."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(str(_PRODUCT)) and not name.startswith(_RUNNERS):
            return True
        frame = frame.f_back
    return False


class KillSwitch:
    """A profile hook counting events by kind (the part of ``_event``'s name before the dot); at ``at`` (kind, n),
    the n-th event of that kind, it SIGKILLs its process, ``lag`` seconds into the event (0: right before it).
    Which code the kill met goes to ``log`` first. ``product_only``: only events the product's code makes count (in
    a process that runs other code too, an Airflow task's: its log writes and its talk with the supervisor)."""

    def __init__(self, at: tuple[str, int] | None, lag: float, log: Path, label: dict,
                 product_only: bool = False) -> None:
        self.at, self.lag, self.log, self.label = tuple(at) if at else None, lag, log, label
        self.product_only = product_only
        self.counts: Counter = Counter()
        self.open_transaction = False
        self.lock = threading.Lock()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            kind = _event(arg)
            if kind is not None:
                self.event(kind, frame)

    def duckdb(self, method: str, sql: str, frame: Any) -> None:
        """A call into DuckDB (its methods are not C calls a profile hook sees: ``CountedConnection`` reports
        them); BEGIN, COMMIT and ROLLBACK tell whether a transaction is open."""
        self.event(f"duckdb.{method}", frame)
        word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if word in ("BEGIN", "COMMIT", "ROLLBACK"):
            self.open_transaction = word == "BEGIN"

    def event(self, kind: str, frame: Any) -> None:
        if self.product_only and not _in_product(frame):
            return
        family = kind.split(".")[0]
        with self.lock:
            self.counts[family] += 1
            if (family, self.counts[family]) != self.at:
                return
        self._record(frame, kind)
        if self.lag > 0:
            threading.Timer(self.lag, os.kill, (os.getpid(), signal.SIGKILL)).start()
        else:
            os.kill(os.getpid(), signal.SIGKILL)

    def _record(self, frame: Any, kind: str) -> None:
        where = frame
        while where is not None and "crawlcycle" not in where.f_code.co_filename:
            where = where.f_back
        site = f"{Path(where.f_code.co_filename).name}:{where.f_lineno} {where.f_code.co_name}" if where else "?"
        row = {**self.label, "event": self.at[1], "kind": kind, "lag": round(self.lag, 4),  # type: ignore[index]
               "site": site, "in_transaction": self.open_transaction}
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


class CountedConnection:
    """A DuckDB connection whose method calls report to the kill switch first."""

    def __init__(self, con: Any, switch: KillSwitch) -> None:
        self._con, self._switch = con, switch

    def __enter__(self) -> CountedConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._con, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._switch.duckdb(name, args[0] if args and isinstance(args[0], str) else "", sys._getframe(1))
            return attr(*args, **kwargs)

        return call


def arm(switch: KillSwitch) -> Callable[[], None]:
    """Count this process's events with ``switch`` from now on (its DuckDB calls through the connections it opens
    from now); the function that stops counting."""
    import duckdb

    connect = duckdb.connect
    duckdb.connect = lambda *a, **k: CountedConnection(connect(*a, **k), switch)  # what crawlcycle.db calls
    threading.setprofile(switch)
    sys.setprofile(switch)

    def disarm() -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        duckdb.connect = connect

    return disarm


def run_counted(spec: dict, product_only: bool = False) -> tuple[int, dict]:
    """Run the task ``spec`` names in this process, counting its events (``product_only``: those of the product's
    code, see KillSwitch) and killing this process at the kill point the spec gives (if any); (exit status, the
    task's result or error, and its event count)."""
    settings = load_settings(spec["config"], environ={})
    switch = KillSwitch(spec.get("kill_at"), spec.get("lag", 0.0), Path(spec["kill_log"]), spec["label"],
                        product_only)
    disarm = arm(switch)
    try:
        inputs = {**spec["inputs"], "start": date.fromisoformat(spec["inputs"]["start"])}
        out = {"result": TASKS[spec["task"]].run(settings, inputs)}
        code = 0
    except Exception as e:  # the task failed: the driver says why, in one line
        out, code = {"error": f"{type(e).__name__}: {next(iter(str(e).splitlines()), '')}"}, 1
    finally:
        disarm()
    # what a worker's result file holds, read back: JSON
    return code, json.loads(json.dumps({**out, "events": switch.counts}, default=str))


def worker() -> int:
    """Import what the tasks need, then run the one task read from stdin (a JSON line)."""
    from crawlcycle.fetch import fetcher  # noqa: F401 - imported before the task is given, as warm-up
    from crawlcycle.parse import warc_records  # noqa: F401
    from crawlcycle.quality import gates

    gates.load_gx()
    line = sys.stdin.readline()
    if not line:
        return 0
    spec = json.loads(line)
    code, out = run_counted(spec)
    Path(spec["result"]).write_text(json.dumps(out))
    return code


class InProcess:
    """Runs each task in this process (no kill point): a straight crawl that counts its tasks' events without
    paying a process and its imports per task. Only the product's events count: this process serves the web too."""

    def run(self, spec: dict) -> tuple[int, dict]:
        return run_counted(spec, product_only=True)

    def close(self) -> None:
        pass


# --- the driver ------------------------------------------------------------------------------------------------


class Workers:
    """Worker processes, each started one task ahead."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.next: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "crawlcycle.devtools.fault_run"], stdin=subprocess.PIPE,
                                text=True, start_new_session=True)

    def run(self, spec: dict) -> tuple[int, dict]:
        """Run one task; (exit status, the worker's result: result or error, and its event count)."""
        proc, self.next = self.next or self._start(), self._start()
        result = self.folder / "task-result.json"
        result.unlink(missing_ok=True)
        proc.stdin.write(json.dumps({**spec, "result": str(result)}) + "\n")  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            status = proc.wait(_TASK_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError(f"task {spec['label']} did not end within {_TASK_TIMEOUT} s") from None
        with contextlib.suppress(ProcessLookupError):  # a killed task's children (a parse pool) go with it
            os.killpg(proc.pid, signal.SIGKILL)
        # a kill landing just after the task's last event may cut the result file as it is written: a killed task
        # has no result
        return status, json.loads(result.read_text()) if status != -signal.SIGKILL and result.is_file() else {}

    def close(self) -> None:
        if self.next:
            self.next.stdin.close()  # type: ignore[union-attr]
            self.next.wait()


@dataclass
class Crawl:
    """One of the two crawls: its folder, its settings file and how its kills went."""

    folder: Path
    settings: Settings
    tally: Tally = field(default_factory=Tally)

    @property
    def config(self) -> Path:
        return self.folder / "settings.toml"


def crawl_days(crawl: Crawl, days: list[date], workers: Workers | InProcess, plan: dict[str, list] | None,
           retry_cycle: bool, progress: Callable[[str], None]) -> list[Task]:
    """Run ``days`` as cycles; with ``plan`` (task key -> kill points), kill where it says and retry."""
    from crawlcycle.pipeline.stages import init

    shutil.rmtree(crawl.folder, ignore_errors=True)
    crawl.folder.mkdir(parents=True)
    write_toml(crawl.settings, crawl.config)
    init(crawl.settings)
    kill_log = crawl.folder / "kills.jsonl"
    tasks: list[Task] = []
    pending = {k: list(v) for k, v in (plan or {}).items()}

    def run(task: Task, **spec: Any) -> Any:
        while True:
            points = pending.get(task.key) or []
            at, lag = points.pop(0) if points else (None, 0.0)
            status, out = workers.run({"config": str(crawl.config), "task": task.task, "kill_at": at, "lag": lag,
                                       "kill_log": str(kill_log), "label": {"task": task.key}, **spec})
            if status == -signal.SIGKILL:
                crawl.tally.kills += 1
                crawl.tally.by_task[task.task] += 1
                if retry_cycle:
                    raise _CycleAgain
                continue
            if at is not None:
                crawl.tally.missed += 1
            if status != 0:
                raise RuntimeError(f"task {task.key} failed: {out.get('error', f'exit status {status}')}")
            task.events = out["events"]
            return out["result"]

    for c, day in enumerate(days, 1):
        while True:
            try:
                cycle_tasks = []
                inputs: dict[str, Any] = {"start": day.isoformat(), "end": None, "run_id": "manual"}
                for t in STAGE_ORDER:
                    out = []
                    for k, shard in enumerate(inputs["shards"] if t.kind == SHARD else [None]):
                        cycle_tasks.append(Task(c, t.name, k if shard else None))
                        out.append(run(cycle_tasks[-1], inputs={**inputs, "shard": shard}))
                    if t.gives:
                        inputs[t.gives] = out if t.kind == SHARD else out[0]
                break
            except _CycleAgain:
                continue
        tasks += cycle_tasks
        survived = f" ({crawl.tally.kills} kills survived so far)" if plan else ""
        progress(f"{crawl.folder.name}: cycle {c}/{len(days)} done{survived}")
    for row in read_jsonl(kill_log):
        crawl.tally.in_transaction += row["in_transaction"]
        crawl.tally.by_event[row["kind"].split(".")[0]] += 1
    return tasks


class _CycleAgain(Exception):
    """A kill under ``retry="cycle"``: the cycle starts over from begin."""


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def kill_plan(tasks: list[Task], kills: int, rng: random.Random) -> dict[str, list[tuple[tuple[str, int], float]]]:
    """``kills`` kill points: each a task drawn at random, a kind of event it has, an event of that kind (as counted
    in the straight run) and a lag into it (half of them right before the event). Drawing the kind first spreads
    the kills over DuckDB calls, file writes, renames and requests, whatever their numbers."""
    plan: dict[str, list[tuple[tuple[str, int], float]]] = {}
    for task in rng.choices([t for t in tasks if t.events], k=kills):
        kind = rng.choice(sorted(task.events))
        lag = 0.0 if rng.random() < 0.5 else rng.uniform(0.0, 0.02)
        plan.setdefault(task.key, []).append(((kind, rng.randint(1, task.events[kind])), lag))
    return plan


# The columns of a cycle that name the Airflow run it was (a crawl outside Airflow has none): compare leaves them out
# when one crawl ran under Airflow.
AIRFLOW_RUN = {"cycles": ("run_id", "interval_end")}


def compare(straight: Settings, killed: Settings,
            ignore: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """Tables whose rows differ between the two crawls (with row counts; columns ``ignore`` names left out), and
    frontier URLs lost or doubled."""
    from crawlcycle.db import connect
    from crawlcycle.devtools.table_digest import table_rows

    def rows(settings: Settings) -> dict[str, list]:
        # files a row names (gate reports, saved models) lie in the crawl's own folder
        folder = str(Path(settings.db_path).parent)
        return {t: [tuple(v.replace(folder, "<crawl>") if isinstance(v, str) else v for v in row) for row in rows]
                for t, rows in table_rows(settings, ignore).items()}

    a, b = rows(straight), rows(killed)
    differ = {t: (len(a.get(t, [])), len(b.get(t, []))) for t in sorted(a.keys() | b.keys()) if a.get(t) != b.get(t)}
    with connect(killed, read_only=True) as con:
        doubled = con.execute("SELECT count(*) - count(DISTINCT url) FROM frontier").fetchall()[0][0]
        urls = {u for u, in con.execute("SELECT url FROM frontier").fetchall()}
    with connect(straight, read_only=True) as con:
        lost = len({u for u, in con.execute("SELECT url FROM frontier").fetchall()} - urls)
    return {"tables": len(a), "differ": differ, "urls_lost": lost, "urls_doubled": doubled,
            "gaps": politeness_gaps(killed)}


def politeness_gaps(settings: Settings) -> dict[str, Any]:
    """Requests of one host that started sooner than min_delay after the end of the one before, across the
    attempts of a killed fetch (every request the servers saw is in fetch_requests)."""
    from crawlcycle.db import connect

    with connect(settings, read_only=True) as con:
        short, total, least = con.execute(
            "WITH r AS (SELECT host, started_at, lag(finished_at) OVER (PARTITION BY host ORDER BY started_at) AS prev "
            "FROM fetch_requests) SELECT count(*) FILTER (WHERE started_at - prev < ?), count(prev), "
            "min(started_at - prev) FROM r WHERE prev IS NOT NULL", [settings.min_delay]).fetchall()[0]
    return {"short": short, "gaps": total, "least": least}


def snapshot_settings(settings: Settings, queries: Path, cycles: int, out: Path) -> Settings:
    """Settings crawling the snapshot as served on loopback (demo_port), each cycle reading ``queries``."""
    from crawlcycle.devtools.warc_server import WarcWeb, loopback_routes
    from crawlcycle.ranking.query_log import write_partitions

    start = date.fromisoformat(settings.start_date)
    write_partitions(queries, out / "query_log", [start + timedelta(days=k) for k in range(cycles)])
    hosts = WarcWeb([Path(settings.snapshot)]).hosts()
    return with_overrides(settings, {"connect_to": loopback_routes(hosts, settings.demo_port),
                                     "allow_networks": "127.0.0.0/8", "query_log_dir": str(out / "query_log"),
                                     # links out of a snapshot fail (404): a high error share is expected there
                                     "gate_warn": ",".join(filter(None, [settings.gate_warn, "error_share"]))})


def fault_run(settings: Settings, out: Path, cycles: int, kills: int, seed: int, retry: str = "task",
              progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Crawl ``cycles`` cycles straight, then again with ``kills`` kills; compare. The served web is whatever
    ``settings`` point at (the demo web, or a snapshot the caller serves)."""
    start = date.fromisoformat(settings.start_date)
    days = [start + timedelta(days=k) for k in range(cycles)]
    straight = Crawl(out / "straight", with_overrides(settings, {"db_path": str(out / "straight" / "crawl.duckdb"),
                                                                 "data_dir": str(out / "straight" / "data")}))
    killed = Crawl(out / "killed", with_overrides(settings, {"db_path": str(out / "killed" / "crawl.duckdb"),
                                                             "data_dir": str(out / "killed" / "data")}))
    workers = Workers(out)
    t0 = time.monotonic()
    try:
        tasks = crawl_days(straight, days, workers, None, False, progress)
        plan = kill_plan(tasks, kills, random.Random(seed))
        progress(f"straight run: {len(tasks)} tasks, {sum(sum(t.events.values()) for t in tasks)} events, "
                 f"{time.monotonic() - t0:.0f} s; killing {kills} times")
        crawl_days(killed, days, workers, plan, retry == "cycle", progress)
    finally:
        workers.close()
    result = {"cycles": cycles, "seed": seed, "retry": retry, "kills": killed.tally.kills,
              "missed": killed.tally.missed, "in_transaction": killed.tally.in_transaction,
              "by_task": dict(killed.tally.by_task), "by_event": dict(killed.tally.by_event),
              **compare(straight.settings, killed.settings), "seconds": round(time.monotonic() - t0)}
    (out / "result.json").write_text(json.dumps(result, indent=1, default=str))
    return result


def report_lines(result: dict[str, Any]) -> list[str]:
    """What a fault run found, for a terminal."""
    gaps = result["gaps"]
    lines = [f"kills survived: {result['kills']} over {result['cycles']} cycles (seed {result['seed']}, retry by "
             f"{result['retry']}); {result['in_transaction']} inside a DuckDB transaction, {result['missed']} "
             "kill points not reached",
             "  by task: " + ", ".join(f"{k} {v}" for k, v in sorted(result["by_task"].items())),
             "  by event: " + ", ".join(f"{k} {v}" for k, v in sorted(result["by_event"].items())),
             f"tables equal: {result['tables'] - len(result['differ'])} of {result['tables']}",
             *(f"  {t} differs: {a} rows straight, {b} killed" for t, (a, b) in result["differ"].items()),
             f"frontier URLs lost: {result['urls_lost']}, doubled: {result['urls_doubled']}",
             f"politeness: {gaps['short']} of {gaps['gaps']} request gaps shorter than min_delay "
             f"(least {gaps['least'] if gaps['least'] is None else round(gaps['least'], 3)} s)"]
    return lines


def failed(result: dict[str, Any]) -> bool:
    return bool(result["differ"] or result["urls_lost"] or result["urls_doubled"] or result["gaps"]["short"])


if __name__ == "__main__":
    sys.exit(worker())
