"""A crawl whose disk fills up: ``db_path`` and ``data_dir`` on a small tmpfs mounted by the test, filled with a
ballast file. The task that meets the full disk fails with one line, leaves the database and the shard files as
they were, and its retry completes once space is freed."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from crawlcycle.cli import main
from crawlcycle.db import connect
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.pipeline import stages
from crawlcycle.pipeline.resource_limits import DiskFullError
from crawlcycle.pipeline.stage_order import SHARD, STAGE_ORDER, TASKS
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
SIZE_MB = 96


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode:
        # as the other tests needing the machine: skipped on a developer's machine, a failure in CI
        (pytest.fail if os.environ.get("CI") else pytest.skip)(
            f"a size-limited tmpfs cannot be mounted here (root needed): {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, leave: int) -> Path:
    """A ballast file taking all but ``leave`` bytes of the mount's free space."""
    ballast = mount / "ballast"
    with open(ballast, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, shutil.disk_usage(mount).free - leave)
    return ballast


def shard_files(shards: list[str]) -> dict[str, bytes]:
    """Every file of the shard folders but the fetch journal (it records the requests that went out, on purpose)."""
    return {str(p): p.read_bytes() for d in shards for p in sorted(Path(d).iterdir()) if p.name != "politeness.jsonl"}


def crawl(settings: Settings, mount: Path) -> Settings:
    s = replace(settings, db_path=str(mount / "crawl.duckdb"), data_dir=str(mount / "data"))
    stages.init(s)
    stages.run_cycle(s, DAY1, progress=lambda m: None)
    return s


def finish(s: Settings, cycle: int, shards: list[str], after: str) -> None:
    """Run the tasks of the cycle that come after task ``after``."""
    names = [t.name for t in STAGE_ORDER]
    for t in STAGE_ORDER[names.index(after) + 1:]:
        for d in shards if t.kind == SHARD else [None]:
            t.run(s, {"cycle": cycle, "shards": shards, "shard": d})
    with connect(s, read_only=True) as con:
        assert con.execute("SELECT status FROM cycles WHERE cycle = ?", [cycle]).fetchall() == [("done",)]


def test_a_fetch_on_a_full_disk_fails_in_one_line_and_its_retry_completes(settings: Settings, small_disk: Path,
                                                                          tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    s = crawl(settings, small_disk)
    cycle = stages.begin(s, DAY2)
    shards = stages.plan_shards(s, cycle)
    tables, files = table_digest(s), shard_files(shards)
    ballast = fill(small_disk, leave=8_000)  # less than a shard's WARC
    with pytest.raises(DiskFullError) as failed:
        stages.fetch(s, shards[0])
    line = str(failed.value)
    assert "\n" not in line and line.startswith(f"disk full: writing {shards[0]}"), line
    assert f"MiB free of {SIZE_MB} MiB on its filesystem; free space there and retry the task" in line
    assert shard_files(shards) == files and table_digest(s) == tables  # no half-written file, no temporary one
    ballast.unlink()
    stages.fetch(s, shards[0])  # the retry
    # `crawlcycle cycle` on a full disk: the same one line, exit status 2; run again once there is space, it completes
    write_toml(s, tmp_path / "s.toml")
    ballast = fill(small_disk, leave=8_000)
    capsys.readouterr()
    cycle_command = ["cycle", "--config", str(tmp_path / "s.toml"), "--date", DAY2.isoformat()]
    assert main(cycle_command) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("crawlcycle: disk full: writing ") and "MiB free of" in err[0], err
    ballast.unlink()
    assert main(cycle_command) == 0
    with connect(s, read_only=True) as con:
        assert con.execute("SELECT status FROM cycles WHERE cycle = ?", [cycle]).fetchall() == [("done",)]


def test_an_update_on_a_full_disk_leaves_the_database_as_it_was(settings: Settings, small_disk: Path) -> None:
    s = crawl(settings, small_disk)
    cycle = stages.begin(s, DAY2)
    shards = stages.plan_shards(s, cycle)
    for task in ("fetch", "parse", "gate_shards"):
        for d in shards if task != "gate_shards" else [None]:
            TASKS[task].run(s, {"cycle": cycle, "shards": shards, "shard": d})
    tables = table_digest(s)
    ballast = fill(small_disk, leave=32_000)  # less than the cycle's new rows
    with pytest.raises(DiskFullError) as failed:
        stages.update_tables(s, cycle, shards)
    assert "\n" not in str(failed.value) and str(failed.value).startswith("disk full: writing "), str(failed.value)
    assert table_digest(s) == tables
    ballast.unlink()
    stages.update_tables(s, cycle, shards)  # the retry
    finish(s, cycle, shards, "update")
