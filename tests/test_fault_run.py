"""The fault-injection run, short: two demo cycles crawled straight and again with SIGKILLs at seeded points, each
killed task retried as Airflow retries it; every table must come out equal. ``crawlcycle fault-run`` is the long
version (docs/howto/recover.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawlcycle.devtools.fault_run import failed, fault_run, report_lines
from crawlcycle.settings import Settings

pytestmark = pytest.mark.faults


def test_killed_tasks_retried_leave_the_tables_of_a_straight_crawl(settings: Settings, tmp_path: Path) -> None:
    result = fault_run(settings, tmp_path / "run", cycles=2, kills=6, seed=7, progress=lambda m: None)
    report = "\n".join(report_lines(result))
    assert not failed(result), report
    assert result["kills"] + result["missed"] == 6 and result["kills"] >= 4, report
    kills = [json.loads(line) for line in (tmp_path / "run" / "killed" / "kills.jsonl").read_text().splitlines()]
    assert len(kills) == result["kills"] and all(k["site"] != "?" for k in kills)
    assert result["tables"] >= 30 and result["urls_lost"] == result["urls_doubled"] == 0
