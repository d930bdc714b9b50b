"""The embedded demo: a generated multi-host web served on loopback, crawled by real Airflow.

The demo web changes by date (``crawlcycle.devtools.demo_web``): one WARC per day, served as a dated series. Which
day the server serves is its clock's: ``crawlcycle demo`` serves the day of the cycle the crawl runs, read from the
crawl database (:class:`CrawlDate`); ``crawlcycle ui`` and ``crawlcycle demo-web --serve`` serve today's date (the
first day before it, the last after it).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

import duckdb

from crawlcycle.airflow.environment import ROOT
from crawlcycle.airflow.task_overhead import utc
from crawlcycle.devtools.airflow_stack import AirflowStack, run_until_stopped
from crawlcycle.devtools.demo_web import DAYS, day_warc, generate
from crawlcycle.devtools.warc_server import Series, ServerHandle, check_warc, run_forever, serve
from crawlcycle.pipeline.stages import init
from crawlcycle.settings import Settings, SettingsError
from crawlcycle.settings.sources import write_toml
from crawlcycle.ui.report import print_report


def demo_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "demo-web"


def demo_days(settings: Settings, regenerate: bool = False, days: int = DAYS) -> list[tuple[date, Path]]:
    """The WARC of each day to serve: the ``snapshot`` setting (every day), else the generated demo web of ``days``
    days from start_date (written when a day's WARC is missing)."""
    first = date.fromisoformat(settings.start_date)
    if settings.snapshot:
        return [(first, check_warc(Path(settings.snapshot), "setting snapshot"))]
    out = demo_dir(settings)
    warcs = [(first + timedelta(days=k), day_warc(out, first + timedelta(days=k), settings.start_date))
             for k in range(days)]
    if regenerate or not all(path.is_file() for _, path in warcs):
        return list(generate(out, hosts=settings.demo_hosts, pages=settings.demo_pages, seed=settings.demo_seed,
                             days=days, start_date=settings.start_date).days)
    return warcs


def ensure_demo_web(settings: Settings, regenerate: bool = False) -> Path:
    """The WARC of the first day to serve (every day's is written when missing)."""
    return demo_days(settings, regenerate)[0][1]


def demo_series(settings: Settings, days: int = DAYS) -> Series:
    """The demo web as a series of dated versions: each day's web from its date on (times are date ordinals)."""
    return Series([([path], day.toordinal()) for day, path in demo_days(settings, days=days)], switch="at-start")


def today() -> int:
    """The clock of ``crawlcycle ui`` and ``crawlcycle demo-web``: today's date."""
    return date.today().toordinal()


class CrawlDate:
    """The clock of ``crawlcycle demo``: the interval start of the crawl's newest cycle, which ``begin`` records
    before the cycle's fetch starts (``start_date`` before the first). The crawl database is read again only when its
    files changed, and read-only: during a fetch no task holds it (the fetch tasks do not open it, and the backfill
    runs one cycle at a time), and the file does not change."""

    def __init__(self, settings: Settings) -> None:
        self.files = (Path(settings.db_path), Path(settings.db_path + ".wal"))
        self.day = date.fromisoformat(settings.start_date)
        self.seen: tuple | None = None
        self.lock = threading.Lock()

    def __call__(self) -> int:
        with self.lock:
            stamp = tuple((s.st_mtime_ns, s.st_size) if (s := _stat(f)) else None for f in self.files)
            if stamp != self.seen and self.files[0].is_file():
                try:
                    with duckdb.connect(str(self.files[0]), read_only=True) as con:
                        row = con.execute("SELECT interval_start FROM cycles ORDER BY cycle DESC LIMIT 1").fetchone()
                except duckdb.Error:  # a task holds it now: the day stays, and it is read at the next request
                    return self.day.toordinal()
                self.day, self.seen = row[0] if row else self.day, stamp
            return self.day.toordinal()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _behaviour(settings: Settings) -> dict:
    path = demo_dir(settings) / "behaviour.json"
    return json.loads(path.read_text()) if not settings.snapshot and path.is_file() else {}


@contextmanager
def _port(settings: Settings) -> Iterator[None]:
    """A demo_port another program holds is a one-line error, not a traceback."""
    try:
        yield
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        raise SettingsError(f"setting demo_port: 127.0.0.1:{settings.demo_port} is in use by another program "
                            "(a demo web already serving?); stop it or choose another port") from None


def start_web(settings: Settings, clock: Callable[[], int] = today, days: int = DAYS) -> ServerHandle:
    """Serve the demo web of ``days`` days on loopback, the day ``clock`` says (a date's ordinal)."""
    with _port(settings):
        return serve(demo_series(settings, days), port=settings.demo_port, behaviour=_behaviour(settings),
                     clock=clock)


def serve_forever(settings: Settings, host: str = "127.0.0.1") -> None:
    """Serve the demo web of today's date in the foreground."""
    with _port(settings):
        run_forever(demo_series(settings), host=host, port=settings.demo_port, behaviour=_behaviour(settings),
                    clock=today)


def reset_crawl(settings: Settings) -> None:
    """Remove the crawl database and shard files, for a fresh demo."""
    for path in (Path(settings.db_path), Path(settings.db_path + ".wal")):
        path.unlink(missing_ok=True)
    shutil.rmtree(Path(settings.data_dir) / "cycles", ignore_errors=True)


def run_demo(settings: Settings, cycles: int = 3, airflow_home: Path | None = None, port: int = 8080) -> int:
    """Fresh crawl of the demo web: backfill ``cycles`` daily cycles through Airflow and print the report."""
    t0 = time.monotonic()
    say = lambda m: print(f"[demo {time.monotonic() - t0:5.0f}s] {m}", flush=True)  # noqa: E731
    days = demo_days(settings)
    say(f"demo web {days[0][1].parent}, {len(days)} days from {days[0][0]}, on http://127.0.0.1:{settings.demo_port} "
        "(hosts told apart by the Host header; each cycle sees the web of its date)")
    reset_crawl(settings)
    seeded = init(settings)
    say(f"crawl database {settings.db_path}: {seeded['seeds']} seed URLs")
    stack = AirflowStack(airflow_home or ROOT / ".airflow", port=port, config=_task_config(settings),
                         log=lambda m: say(f"airflow: {m}"))
    say("setting up Airflow metadata (SQLite) and the crawl_duckdb pool")
    stack.setup(fresh=True)
    first = date.fromisoformat(settings.start_date)
    last = first + timedelta(days=cycles - 1)
    with start_web(settings, clock=CrawlDate(settings)), stack:
        say("starting Airflow (scheduler, LocalExecutor, API server, DAG processor)")
        stack.start()
        say(f"backfilling crawl_cycle {first} .. {last}: one cycle per daily query-log partition")
        stack.backfill(first.isoformat(), last.isoformat())
        runs = stack.wait_for_runs(cycles, timeout=300 * cycles)
        span = max(utc(r["end_date"]) for r in runs) - min(utc(r["start_date"]) for r in runs)
        say(f"all runs succeeded, {span.total_seconds():.0f} s from the first run's start to the last one's end; "
            "stopping Airflow")
    print_report(settings, airflow_metadata=stack.env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    return 0


def run_ui(settings: Settings, port: int = 8080) -> int:
    """Serve the demo web and run Airflow until interrupted, for exploring the UI."""
    with start_web(settings):
        return run_until_stopped(AirflowStack(ROOT / ".airflow", port=port, config=_task_config(settings)))


def _task_config(settings: Settings) -> Path:
    """The resolved settings as a TOML file for Airflow's tasks, so they run with what this command got."""
    path = Path(settings.data_dir) / "airflow-settings.toml"
    write_toml(settings, path)
    return path
