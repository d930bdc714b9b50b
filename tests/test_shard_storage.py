"""Shard files through an fsspec URL (``file://`` and ``memory://``): whole cycles, with nothing under the
local data folder's cycles/, and staged writes that only land when the stage succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import fsspec
import pytest

from crawlcycle.cli import main
from crawlcycle.db import connect
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml

SHARD_FILES = {"urls.parquet", "hosts_in.parquet", "responses.warc.gz", "fetch_log.parquet", "pages.parquet",
               "links.parquet", "timing.json"}


@pytest.fixture
def memory_url(tmp_path: Path) -> Iterator[str]:
    url = f"memory://shards/{tmp_path.name}"  # the memory file system is shared by the whole process
    yield url
    shard_storage.clear(url)


def _stored(url: str) -> dict[str, set[str]]:
    """Shard folder -> file names under a stored cycle folder."""
    fs, root = fsspec.core.url_to_fs(url)
    out: dict[str, set[str]] = {}
    for path in fs.find(root):
        shard, name = path.rstrip("/").split("/")[-2:]
        out.setdefault(shard, set()).add(name)
    return out


@pytest.mark.parametrize("scheme", ["file", "memory"])
def test_cycles_exchange_shards_through_a_url(settings: Settings, tmp_path: Path, memory_url: str,
                                              scheme: str) -> None:
    url = (tmp_path / "store").as_uri() if scheme == "file" else memory_url
    s = replace(settings, shard_storage=url)
    stages.init(s)
    first = stages.run_cycle(s, date(2026, 11, 1), progress=lambda m: None)
    second = stages.run_cycle(s, date(2026, 11, 2), progress=lambda m: None)
    assert first["fetched"] > 0 and second["fetched"] > 0
    assert not (Path(s.data_dir) / "cycles").exists()
    stored = _stored(shard_storage.cycle_location(s, 2))
    assert 2 <= len(stored) <= s.shards
    assert all(SHARD_FILES <= names for names in stored.values()), stored
    with connect(s, read_only=True) as con:
        # update merged every stored shard of cycle 2
        shards = {r[0] for r in con.execute("SELECT DISTINCT shard FROM fetch_log WHERE cycle = 2").fetchall()}
        assert {f"shard-{k:03d}" for k in shards} == set(stored)
        assert con.execute("SELECT count(DISTINCT gate), bool_and(success) FROM dq_results").fetchall() == [(4, True)]
    # the gates run alone outside Airflow find the stored shards too
    assert shard_storage.stored_shards(s, 2) == sorted(f"{shard_storage.cycle_location(s, 2)}/{n}" for n in stored)
    write_toml(s, tmp_path / "s.toml")
    assert main(["check", "fetch", "--cycle", "2", "--config", str(tmp_path / "s.toml")]) == 0


def test_remote_shard_is_stored_only_when_the_stage_succeeds(memory_url: str) -> None:
    location = f"{memory_url}/00001/shard-002"
    with shard_storage.local_shard(location) as d:
        assert d.name == "shard-002"
        (d / "urls.parquet").write_bytes(b"first")
    with pytest.raises(RuntimeError), shard_storage.local_shard(location) as d:
        assert (d / "urls.parquet").read_bytes() == b"first"
        (d / "urls.parquet").write_bytes(b"half-written")
        (d / "fetch_log.parquet").write_bytes(b"partial")
        raise RuntimeError("fetch failed")
    with shard_storage.local_shards([location]) as (d,):
        assert sorted(p.name for p in d.iterdir()) == ["urls.parquet"]
        assert (d / "urls.parquet").read_bytes() == b"first"
        (d / "urls.parquet").write_bytes(b"read-only copy")
    assert fsspec.open(f"{location}/urls.parquet").open().read() == b"first"
    shard_storage.clear(f"{memory_url}/00001")
    assert _stored(memory_url) == {}


def test_default_storage_is_the_local_data_folder(settings: Settings) -> None:
    assert shard_storage.shard_location(settings, 3, 1) == str(Path(settings.data_dir) / "cycles/00003/shard-001")
    assert shard_storage.cycle_location(replace(settings, shard_storage="s3://b/p/"), 3) == "s3://b/p/00003"
