"""Shared fixtures: a generated demo web served on loopback, settings pointing at it, and an isolated
Airflow home (set before anything imports Airflow, which reads its configuration at import)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlcycle.devtools.airflow_stack import airflow_env

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="crawlcycle-airflow-"))
os.environ.update(airflow_env(_AIRFLOW_HOME))
os.environ.pop("CRAWLCYCLE_CONFIG", None)
for _key in [k for k in os.environ if k.startswith("CRAWLCYCLE_")]:
    del os.environ[_key]

from crawlcycle.devtools.demo_web import DemoWeb, generate  # noqa: E402
from crawlcycle.devtools.warc_server import serve  # noqa: E402
from crawlcycle.settings import Settings, load_settings  # noqa: E402

USER_AGENT = "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"


@pytest.fixture(scope="session")
def demo_web(tmp_path_factory: pytest.TempPathFactory) -> DemoWeb:
    return generate(tmp_path_factory.mktemp("demo-web"), hosts=8, pages=240, seed=11, days=3)


@pytest.fixture(scope="session")
def demo_server(demo_web: DemoWeb) -> Iterator[int]:
    import json

    with serve([demo_web.warc], behaviour=json.loads(demo_web.behaviour.read_text())) as handle:
        yield handle.port


def demo_settings(tmp_path: Path, demo_web: DemoWeb, port: int, **overrides: object) -> Settings:
    values = {
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.01, "max_delay": 1.0, "delay_factor": 0.5, "db_path": str(tmp_path / "crawl.duckdb"),
        "data_dir": str(tmp_path / "data"), "seeds_file": str(demo_web.seeds),
        "query_log_dir": str(demo_web.query_log_dir), "batch_size": 120, "per_host_cap": 20, "shards": 3,
        "start_date": "2026-11-01", "end_date": "2026-11-03", "parse_workers": 1,
    }
    values.update(overrides)
    return load_settings(overrides=values, environ={})


@pytest.fixture
def settings(tmp_path: Path, demo_web: DemoWeb, demo_server: int) -> Settings:
    return demo_settings(tmp_path, demo_web, demo_server)


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow metadata DB (SQLite) in this session's Airflow home."""
    exe = Path(sys.executable).with_name("airflow")
    subprocess.run([str(exe), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())
    return _AIRFLOW_HOME
