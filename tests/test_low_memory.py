"""Bounded memory: a crawl of real long pages, with a release in the middle that its refreshes find, runs every
stage within a DuckDB memory limit far below the default; a task that meets the limit fails with one line naming
the task and the setting, keeps nothing it wrote, and completes once the limit is raised."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import duckdb
import pytest

from crawlcycle.cli import main
from crawlcycle.db import connect
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.pipeline import stages
from crawlcycle.pipeline.resource_limits import OutOfMemoryError
from crawlcycle.pipeline.stage_order import SHARD, STAGE_ORDER, TASKS
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from tests.support.release import next_release
from tests.support.three_sites import three_site_settings

LIMIT = "256MB"
LIMIT_BYTES = 256 * 10**6
CYCLES, RELEASE = 5, 3  # the release is live from cycle 3: cycles 4 and 5 re-fetch pages it changed


def test_a_crawl_of_long_pages_through_a_release_runs_every_stage_in_256_mb(three_sites: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    # The sphinx and nodejs docs hold long real pages (nodejs' all.html alone is 5.8 MB), each in hundreds of the
    # workload's top 10s; the release changes every one of their pages.
    release, changed = next_release(three_sites["warc"], ("sphinx.docs.test", "nodejs.docs.test"),
                                    tmp_path / "release.warc.gz")
    assert changed > 150
    settings = three_site_settings(duckdb_memory_limit=LIMIT)
    simulate(settings, [three_sites["warc"], release], three_sites["queries"], three_sites["seeds"], ["hybrid"],
             CYCLES, tmp_path / "out", progress=lambda m: None, cache=three_sites["cache"], starts=[1, RELEASE],
             switch="at-start")
    with duckdb.connect(str(tmp_path / "out" / "work" / "crawl.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cycles WHERE status = 'done'").fetchone()[0] == CYCLES
        # the release's changes were found and each changed copy ranked against its results (refresh by impact)
        moves = con.execute("SELECT count(*), sum(queries) FROM check_moves WHERE carried > 0").fetchone()
        assert moves[0] >= 3 and moves[1] >= 300, moves
        # what joining each changed copy's text to every result row holding it would carry: over the limit
        carried = con.execute("""
            SELECT max(total) FROM (
                SELECT p.replaced_cycle, sum(length(p.text) * (SELECT count(*) FROM query_results r WHERE r.url = p.url
                                                               AND r.cycle IN (p.replaced_cycle - 1, p.replaced_cycle)))
                       AS total
                FROM replaced_pages p JOIN page_checks c ON c.url = p.url AND c.cycle = p.replaced_cycle
                WHERE c.changed GROUP BY p.replaced_cycle)""").fetchone()[0]
        assert carried > 4 * LIMIT_BYTES, carried


DAY1, DAY2, DAY3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)


def test_a_task_out_of_memory_fails_in_one_line_keeps_nothing_and_reruns_once_the_limit_is_raised(
        settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    stages.init(settings)
    stages.run_cycle(settings, DAY1, progress=lambda m: None)
    inputs: dict = {"start": DAY2, "end": None, "run_id": "manual"}
    for t in STAGE_ORDER[:STAGE_ORDER.index(TASKS["refit"])]:
        out = [t.run(settings, {**inputs, "shard": d}) for d in inputs["shards"]] if t.kind == SHARD \
            else t.run(settings, inputs)
        if t.gives:
            inputs[t.gives] = out
    tables = table_digest(settings)
    with pytest.raises(OutOfMemoryError) as failed:
        TASKS["refit"].run(replace(settings, duckdb_memory_limit="1MB"), inputs)
    line = str(failed.value)
    assert "\n" not in line and line.startswith("out of memory: task refit needs more than duckdb_memory_limit = 1MB "
                                                "(DuckDB: "), line
    assert line.endswith("raise it in the settings file or CRAWLCYCLE_DUCKDB_MEMORY_LIMIT and run the cycle again "
                         "(nothing the task wrote was kept)"), line
    assert table_digest(settings) == tables  # nothing of the refit's transaction is left
    for t in STAGE_ORDER[STAGE_ORDER.index(TASKS["refit"]):]:
        t.run(settings, inputs)  # the rerun, at the limit the cycle recorded
    # `crawlcycle cycle` at a limit too low: one line, exit status 2; run again once it is raised, it completes
    write_toml(replace(settings, duckdb_memory_limit="1MB"), tmp_path / "low.toml")
    capsys.readouterr()
    assert main(["cycle", "--config", str(tmp_path / "low.toml"), "--date", DAY3.isoformat()]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("crawlcycle: out of memory: task ") \
        and "duckdb_memory_limit = 1MB" in err[0], err
    write_toml(settings, tmp_path / "raised.toml")
    assert main(["cycle", "--config", str(tmp_path / "raised.toml"), "--date", DAY3.isoformat()]) == 0
    with connect(settings, read_only=True) as con:
        assert con.execute("SELECT cycle, status FROM cycles ORDER BY cycle").fetchall() == [
            (1, "done"), (2, "done"), (3, "done")]
