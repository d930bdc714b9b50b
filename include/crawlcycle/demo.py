"""The embedded demo: a generated multi-host web served on loopback, crawled by real Airflow."""

from __future__ import annotations

import json
import shutil
import time
from datetime import date, timedelta
from pathlib import Path

from crawlcycle.airflow_runner import ROOT, AirflowStack
from crawlcycle.cycle import init
from crawlcycle.demo_web import DemoWeb, generate
from crawlcycle.report import print_report
from crawlcycle.settings import Settings, write_toml
from crawlcycle.webserver import ServerHandle, run_forever, serve


def demo_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "demo-web"


def ensure_demo_web(settings: Settings, regenerate: bool = False) -> Path:
    """The WARC to serve: the ``snapshot`` setting, else the generated demo web (written when missing)."""
    if settings.snapshot:
        if not Path(settings.snapshot).is_file():
            raise FileNotFoundError(f"setting snapshot: {settings.snapshot} does not exist")
        return Path(settings.snapshot)
    out = demo_dir(settings)
    if regenerate or not (out / "web.warc.gz").is_file():
        web: DemoWeb = generate(out, hosts=settings.demo_hosts, pages=settings.demo_pages, seed=settings.demo_seed,
                                start_date=settings.start_date)
        return web.warc
    return out / "web.warc.gz"


def _behaviour(settings: Settings) -> dict:
    path = demo_dir(settings) / "behaviour.json"
    return json.loads(path.read_text()) if not settings.snapshot and path.is_file() else {}


def start_web(settings: Settings) -> ServerHandle:
    return serve([ensure_demo_web(settings)], port=settings.demo_port, behaviour=_behaviour(settings))


def serve_forever(settings: Settings) -> None:
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
        stack.wait_for_runs(cycles, timeout=300 * cycles)
        say("all runs succeeded; stopping Airflow")
    print_report(settings)
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
