"""The embedded demo: a generated multi-host web served on loopback, crawled by real Airflow."""

from __future__ import annotations

import errno
import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path

from crawlcycle.airflow.environment import ROOT
from crawlcycle.airflow.task_overhead import utc
from crawlcycle.devtools.airflow_stack import AirflowStack
from crawlcycle.devtools.demo_web import DemoWeb, generate
from crawlcycle.devtools.warc_server import ServerHandle, check_warc, run_forever, serve
from crawlcycle.pipeline.stages import init
from crawlcycle.settings import Settings, SettingsError, write_toml
from crawlcycle.ui.report import print_report


def demo_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "demo-web"


def ensure_demo_web(settings: Settings, regenerate: bool = False) -> Path:
    """The WARC to serve: the ``snapshot`` setting, else the generated demo web (written when missing)."""
    if settings.snapshot:
        return check_warc(Path(settings.snapshot), "setting snapshot")
    out = demo_dir(settings)
    if regenerate or not (out / "web.warc.gz").is_file():
        web: DemoWeb = generate(out, hosts=settings.demo_hosts, pages=settings.demo_pages, seed=settings.demo_seed,
                                start_date=settings.start_date)
        return web.warc
    return out / "web.warc.gz"


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


def start_web(settings: Settings) -> ServerHandle:
    with _port(settings):
        return serve([ensure_demo_web(settings)], port=settings.demo_port, behaviour=_behaviour(settings))


def serve_forever(settings: Settings) -> None:
    with _port(settings):
        run_forever([ensure_demo_web(settings)], port=settings.demo_port, behaviour=_behaviour(settings))


def reset_crawl(settings: Settings) -> None:
    """Remove the crawl database and shard files, for a fresh demo."""
    for path in (Path(settings.db_path), Path(settings.db_path + ".wal")):
        path.unlink(missing_ok=True)
    shutil.rmtree(Path(settings.data_dir) / "cycles", ignore_errors=True)


def run_demo(settings: Settings, cycles: int = 3, airflow_home: Path | None = None, port: int = 8080) -> int:
    """Fresh crawl of the demo web: backfill ``cycles`` daily cycles through Airflow and print the report."""
    t0 = time.monotonic()
    say = lambda m: print(f"[demo {time.monotonic() - t0:5.0f}s] {m}", flush=True)  # noqa: E731
    warc = ensure_demo_web(settings)
    say(f"demo web {warc} on http://127.0.0.1:{settings.demo_port} (hosts told apart by the Host header)")
    reset_crawl(settings)
    seeded = init(settings)
    say(f"crawl database {settings.db_path}: {seeded['seeds']} seed URLs")
    stack = AirflowStack(airflow_home or ROOT / ".airflow", port=port, config=_task_config(settings),
                         log=lambda m: say(f"airflow: {m}"))
    say("setting up Airflow metadata (SQLite) and the crawl_duckdb pool")
    stack.setup(fresh=True)
    first = date.fromisoformat(settings.start_date)
    last = first + timedelta(days=cycles - 1)
    with start_web(settings), stack:
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
    stack = AirflowStack(ROOT / ".airflow", port=port, config=_task_config(settings))
    if not (stack.home / "airflow.db").exists():
        stack.setup()
    with start_web(settings), stack:
        stack.start()
        print(f"Airflow UI: {stack.url}  (login admin / admin).  Ctrl-C stops Airflow and the demo web.", flush=True)
        try:
            while stack.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


def _task_config(settings: Settings) -> Path:
    """The resolved settings as a TOML file for Airflow's tasks, so they run with what this command got."""
    path = Path(settings.data_dir) / "airflow-settings.toml"
    write_toml(settings, path)
    return path
