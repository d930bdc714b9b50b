"""The soak run, short: three daily cycles scheduled by Airflow's own scheduler, catching up from three days back on
the changing demo web, while SIGKILLs hit the scheduler, the API server, the DAG processor, task processes and the
writer inside its transaction, each twice; every table must equal a clean crawl's, each day one successful run and
one done cycle. ``make soak`` is the fortnight (docs/howto/recover.md)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from crawlcycle.devtools.soak_run import TARGETS, failed, report_lines, soak
from crawlcycle.settings import Settings

pytestmark = [pytest.mark.airflow, pytest.mark.faults]


def test_scheduled_cycles_under_kills_of_every_component_leave_the_tables_of_a_clean_crawl(
        settings: Settings, tmp_path: Path) -> None:
    small = replace(settings, demo_hosts=8, demo_pages=240, batch_size=120, per_host_cap=20, shards=3)
    result = soak(small, tmp_path / "soak", cycles=3, kills=2 * len(TARGETS), seed=2, progress=lambda m: None)
    report = "\n".join(report_lines(result))
    assert not failed(result), report
    assert [s for _, s in result["runs"]] == ["success"] * 3 and not result["cycles_lost_or_doubled"], report
    # every target was hit, the writer inside a DuckDB transaction
    assert set(result["by_target"]) == set(TARGETS) and result["kills"] + result["missed"] == 2 * len(TARGETS), report
    kills = [json.loads(line) for line in (tmp_path / "soak" / "airflow" / "kills.jsonl").read_text().splitlines()]
    assert any(k["in_transaction"] for k in kills) and all(k["site"] != "?" for k in kills), kills
    assert result["tables"] >= 40 and result["urls_lost"] == result["urls_doubled"] == 0, report
