"""docs/howto/your-own-crawl.md followed as a user would: its settings file and its commands, read from the page and
run as written from a project root, against real documentation sites served on loopback (../shared/corpus, with
their robots.txt) and a query log of dated partitions; the scheduler, not a backfill, runs the intervals. What the
page's file cannot know (the loopback route, a start date two days back, catchup, an end so that a day ending
during the test adds no run) comes from CRAWLCYCLE_* variables, as an operator's deployment would set them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from crawlcycle.db import connect
from crawlcycle.devtools.airflow_stack import ADMIN, AirflowStack
from crawlcycle.devtools.warc_server import serve
from crawlcycle.settings.sources import load_settings
from tests.support.net import free_port, port_open
from tests.test_readme_commands import _FENCE, page_commands

pytestmark = pytest.mark.airflow

ROOT = Path(__file__).resolve().parents[1]
HOWTO = ROOT / "docs" / "howto" / "your-own-crawl.md"
VENV = Path(sys.executable).parents[1]
SEEDS = "http://django.docs.test/contents.html\nhttp://python.docs.test/index.html\n"
QUERIES = "django queryset filter\t40\npython asyncio event loop\t25\ndjango migrations\t12\npython unittest mock\t9\n"


def _settings_file() -> str:
    (toml,) = [body for info, body in _FENCE.findall(HOWTO.read_text()) if info == "toml"]
    return toml


def test_the_howto_s_staging_settings_are_the_ones_its_test_routes_with() -> None:
    """The staging section's variables: valid settings, and the two this page's crawl of loopback sites is given."""
    (block,) = [body for info, body in _FENCE.findall(HOWTO.read_text()) if info == "text" and "CRAWLCYCLE_" in body]
    environ = dict(line.split("=", 1) for line in block.split())
    assert sorted(environ) == ["CRAWLCYCLE_ALLOW_NETWORKS", "CRAWLCYCLE_CONNECT_TO"]
    settings = load_settings(environ=environ)
    assert settings.connect_target("docs.example.org") == ("10.20.0.5", 8080)
    assert settings.allow_networks_list() == ["10.20.0.0/16"]


def _shell(command: str, cwd: Path, env: dict[str, str]) -> str:
    res = subprocess.run(["bash", "-ec", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{command}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
    return res.stdout


def test_the_howto_crawls_a_site_on_a_schedule(dev_docs: Path, tmp_path: Path) -> None:
    blocks = [block for block in page_commands(HOWTO) if block]
    (server,) = [c for block in blocks for c in block if c.startswith(".venv/bin/crawlcycle airflow ")]
    project, crawl = tmp_path / "project", tmp_path / "my-crawl"
    project.mkdir()
    (project / ".venv").symlink_to(VENV)
    crawl.mkdir()
    (crawl / "crawlcycle.toml").write_text(_settings_file())
    (crawl / "seeds.txt").write_text(SEEDS)
    today = datetime.now(UTC).date()  # the scheduler's days are UTC days
    days = [today - timedelta(days=2), today - timedelta(days=1)]
    for day in days:
        (crawl / "query_log" / f"dt={day}").mkdir(parents=True)
        (crawl / "query_log" / f"dt={day}" / "queries.tsv").write_text(QUERIES)
    port = free_port()
    with serve([dev_docs]) as site:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAWLCYCLE_", "AIRFLOW"))} | {
            "CRAWLCYCLE_ALLOWED_DOMAINS": "docs.test", "CRAWLCYCLE_CONNECT_TO": f"*.test=127.0.0.1:{site.port}",
            "CRAWLCYCLE_ALLOW_NETWORKS": "127.0.0.0/8", "CRAWLCYCLE_MIN_DELAY": "0.01", "CRAWLCYCLE_MAX_DELAY": "0.5",
            "CRAWLCYCLE_BATCH_SIZE": "40", "CRAWLCYCLE_SHARDS": "1", "CRAWLCYCLE_START_DATE": str(days[0]),
            "CRAWLCYCLE_CATCHUP": "true", "CRAWLCYCLE_END_DATE": str(days[1])}  # no third run if a day ends meanwhile
        outputs: dict[str, str] = {}
        proc = None
        try:
            for block in blocks:  # the page's commands in its order
                if server in block:  # runs until Ctrl-C: in the background, once the UI answers
                    proc = subprocess.Popen(["bash", "-ec", f"exec {server} --port {port}"], cwd=project, env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                            start_new_session=True)
                    lines = []
                    for line in proc.stdout:  # type: ignore[union-attr]
                        lines.append(line)
                        if line.startswith("Airflow UI:"):
                            break
                    assert proc.poll() is None, "".join(lines)
                elif block[0].startswith("eval "):  # sets the environment of the commands after it: one shell
                    outputs["\n".join(block)] = _shell("\n".join(block), project, env)
                else:
                    outputs.update({command: _shell(command, project, env) for command in block})
                if any(" dags unpause " in c for c in block):
                    # the scheduler runs the two complete intervals from start_date by itself; the page's last
                    # section reads what they left
                    # the environment of the Airflow that runs, on its port
                    exports = _shell(".venv/bin/crawlcycle airflow-env --config ../my-crawl/crawlcycle.toml", project,
                                     env)
                    assert f"export AIRFLOW__API__PORT='{port}'" in exports, exports
                    stack = AirflowStack(crawl / ".airflow", port=port, log=lambda m: None)
                    runs = stack.wait_for_runs(2, timeout=900)
                    assert [r["run_type"] for r in runs] == ["scheduled", "scheduled"]
                    token = requests.post(f"{stack.url}/auth/token", json=dict(zip(("username", "password"), ADMIN,
                                                                                   strict=True)), timeout=30)
                    page = requests.get(f"{stack.url}/crawl/", timeout=30,
                                        headers={"Authorization": f"Bearer {token.json()['access_token']}"})
                    assert page.ok and all(str(day) in page.text for day in days), page.text[:2000]
            # the page's manual trigger: the next cycle, run now, crawls for today
            (manual,) = [r for r in stack.wait_for_runs(3, timeout=600) if r["run_type"] == "manual"]
            assert manual["run_after"].startswith(str(today)), manual  # no logical date: it runs for when it runs
            assert proc is not None
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=120) == 0
        finally:
            if proc and proc.poll() is None:  # a failure above: nothing it started may outlive the test
                os.killpg(proc.pid, signal.SIGKILL)
    assert not port_open(port)
    (report,) = [out for command, out in outputs.items() if re.match(r"\.venv/bin/crawlcycle report\b", command)]
    assert all(re.search(rf"{day}.*done", report) for day in days), report
    # the crawl's own Airflow home, beside its settings file, holds the runs' task instances
    assert report.count("Airflow overhead: ") == 2 and "no Airflow metadata database" not in report, report
    (explain,) = [out for command, out in outputs.items() if "v_batch_explain" in command]
    assert "shape: (20," in explain and "docs.test" in explain, explain
    settings = load_settings(crawl / "crawlcycle.toml", environ=env)
    with connect(settings, read_only=True) as con:
        cycles = con.execute("SELECT cycle, interval_start, query_partition, status, fetched FROM cycles "
                             "ORDER BY cycle").fetchall()
        robots = con.execute("SELECT count(DISTINCT host) FROM robots").fetchall()[0][0]
        sources = con.execute("SELECT settings->'$.sources.catchup', settings->>'$.values.user_agent' FROM cycles "
                              "WHERE cycle = 1").fetchall()[0]
    # each interval's cycle read its own partition, and fetched; the manual run's, today's, the latest there is
    assert [(c[0], c[1], c[2], c[3]) for c in cycles] == [(1, days[0], days[0], "done"), (2, days[1], days[1], "done"),
                                                          (3, today, days[1], "done")]
    assert all(c[4] > 0 for c in cycles) and robots >= 2
    assert sources[1] == "examplebot/1.0 (+https://example.org/crawler)" and "CRAWLCYCLE_CATCHUP" in sources[0]
