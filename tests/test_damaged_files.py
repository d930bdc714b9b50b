"""Damaged files a crawl meets after a crash or a bad copy: a shard Parquet file cut short or with damage inside, a
WARC cut mid-record, a DuckDB file whose last write was torn. Each is a one-line error naming the file (and the task
to run again), or is recovered; never a silently wrong table."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import date
from pathlib import Path

import duckdb
import pytest

from crawlcycle.cli import main
from crawlcycle.contracts.shard_files import DamagedShardFile
from crawlcycle.db import connect
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.parse.warc_records import DamagedWarc
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings, write_toml
from tests.support.demo import demo_settings

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Path:
    """A crawl with cycle 1 done and cycle 2 fetched and parsed, not yet merged."""
    folder = tmp_path_factory.mktemp("fetched")
    s = demo_settings(folder, demo_web, demo_server)
    stages.init(s)
    stages.run_cycle(s, DAY1, progress=lambda m: None)
    cycle = stages.begin(s, DAY2)
    for d in stages.plan_shards(s, cycle):
        stages.fetch(s, d)
        stages.parse(s, d)
    return folder


@pytest.fixture
def crawl(fetched: Path, tmp_path: Path, demo_web: DemoWeb, demo_server: int) -> tuple[Settings, list[str]]:
    """A copy of ``fetched`` of its own: its settings and its cycle 2 shard folders."""
    shutil.copytree(fetched, tmp_path / "crawl")
    settings = demo_settings(fetched, demo_web, demo_server)
    s = replace(settings, db_path=str(tmp_path / "crawl" / "crawl.duckdb"), data_dir=str(tmp_path / "crawl" / "data"))
    return s, shard_storage.stored_shards(s, 2)


def load(folder: Path) -> Settings:
    return load_settings(overrides={"db_path": str(folder / "crawl.duckdb"), "data_dir": str(folder / "data")},
                         environ={})


def cut(path: Path, keep: float = 0.5) -> None:
    with open(path, "r+b") as f:
        f.truncate(int(os.path.getsize(path) * keep))


def test_a_shard_parquet_cut_short_stops_the_gate_and_the_update_in_one_line(crawl) -> None:
    s, shards = crawl
    pages = Path(shards[1]) / "pages.parquet"
    cut(pages)
    tables = table_digest(s)
    want = f"shard file {pages} is missing or damaged ("
    for run in (lambda: stages.gate(s, "parse", 2, shards), lambda: stages.update_tables(s, 2, shards)):
        with pytest.raises(DamagedShardFile) as failed:
            run()
        assert str(failed.value).startswith(want) and str(failed.value).endswith(
            f"); run the parse task of {Path(shards[1]).name} again") and "\n" not in str(failed.value)
    assert table_digest(s) == tables
    stages.parse(s, shards[1])  # what the message says
    stages.update_tables(s, 2, shards)


def test_damage_inside_a_shard_parquet_stops_the_update_in_one_line(crawl) -> None:
    s, shards = crawl
    links = Path(shards[0]) / "links.parquet"
    data = bytearray(links.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = bytes(64)  # the footer stays whole: damage found when read
    links.write_bytes(bytes(data))
    tables = table_digest(s)
    with pytest.raises(DamagedShardFile) as failed:
        stages.update_tables(s, 2, shards)
    assert str(failed.value).startswith(f"shard file {links} is missing or damaged (")
    assert table_digest(s) == tables


def test_a_warc_cut_mid_record_stops_the_parse_in_one_line(crawl) -> None:
    s, shards = crawl
    warc = Path(shards[0]) / "responses.warc.gz"
    cut(warc, 0.6)
    pages = (Path(shards[0]) / "pages.parquet").read_bytes()
    with pytest.raises(DamagedWarc) as failed:
        stages.parse(s, shards[0])
    assert str(failed.value).startswith(f"{warc}: WARC file ") and str(failed.value).endswith(
        "a shard's WARC is written by its fetch task: run that task again")
    assert (Path(shards[0]) / "pages.parquet").read_bytes() == pages  # the parse output of before stays
    stages.fetch(s, shards[0])
    stages.parse(s, shards[0])


def test_a_torn_last_write_of_the_database_recovers_the_last_commit(tmp_path: Path) -> None:
    """A crash in the middle of a commit leaves the write-ahead log cut: DuckDB replays the whole entries."""
    s = load(tmp_path)
    with connect(s) as con:
        con.execute("SET checkpoint_threshold = '1GB'")  # the rows below stay in the log
        con.execute("CREATE TABLE t AS SELECT range AS i FROM range(1000)")
        con.execute("CHECKPOINT")
        con.execute("INSERT INTO t SELECT range FROM range(200000)")
        # the files as a crash would leave them: the log holds the last commit, here cut half-way
        shutil.copy(s.db_path, tmp_path / "torn.duckdb")
        shutil.copy(s.db_path + ".wal", tmp_path / "torn.duckdb.wal")
    cut(tmp_path / "torn.duckdb.wal")
    with connect(replace(s, db_path=str(tmp_path / "torn.duckdb")), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(1000,)]


def test_a_cut_database_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    s = load(tmp_path)
    with connect(s) as con:
        con.execute("CREATE TABLE t AS SELECT range AS i, repeat('x', 100) AS pad FROM range(300000)")
    cut(Path(s.db_path))
    write_toml(s, tmp_path / "s.toml")
    for command in (["sql", "SELECT count(*), max(pad) FROM t"], ["report"]):
        assert main([*command, "--config", str(tmp_path / "s.toml")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and s.db_path in err[0], err
    with pytest.raises(duckdb.Error):  # nothing was "repaired" behind the user's back
        with duckdb.connect(s.db_path, read_only=True) as con:
            con.execute("SELECT count(*), max(pad) FROM t").fetchall()
