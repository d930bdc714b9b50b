"""Where shard folders live between tasks: a local folder (``<data_dir>/cycles``) or, when the setting
``shard_storage`` is a URL (``file:///shared/shards``, ``s3://bucket/prefix``, ...), an fsspec file system
that every worker reaches.

A shard is named by its location string, which is what tasks pass each other. Stages always work on a
local folder: the fetcher streams WARC records, the parser and DuckDB read files by path. So a remote shard
is staged: copied into a temporary folder before the stage and, for stages that write, copied back after
it succeeds. A failed stage leaves the stored shard as it was, so a retry starts from the same files.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from crawlcycle.settings import Settings


def is_remote(location: str) -> bool:
    return "://" in location


def cycle_location(settings: Settings, cycle: int) -> str:
    """The folder (path or URL) holding cycle ``cycle``'s shards."""
    root = settings.shard_storage.rstrip("/") or str(Path(settings.data_dir) / "cycles")
    return f"{root}/{cycle:05d}"


def shard_location(settings: Settings, cycle: int, shard: int) -> str:
    return f"{cycle_location(settings, cycle)}/shard-{shard:03d}"


def clear(location: str) -> None:
    """Remove a stored folder and everything in it, if it exists."""
    if not is_remote(location):
        shutil.rmtree(location, ignore_errors=True)
        return
    fs, path = _fs(location)
    if fs.exists(path):
        fs.rm(path, recursive=True)


def stored_shards(settings: Settings, cycle: int) -> list[str]:
    """Locations of the shards stored for cycle ``cycle``, in order."""
    location = cycle_location(settings, cycle)
    if not is_remote(location):
        return sorted(str(p) for p in Path(location).glob("shard-*"))
    fs, path = _fs(location)
    names = [p.rstrip("/").rsplit("/", 1)[-1] for p in fs.glob(f"{path}/shard-*")]
    return sorted(f"{location}/{name}" for name in names)


@contextmanager
def local_shard(location: str, write: bool = True) -> Iterator[Path]:
    """A local folder holding the shard's files; with ``write`` it is created when missing and what the block
    leaves in it is stored back when the block succeeds."""
    if not is_remote(location):
        path = Path(location)
        if write:
            path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    fs, remote = _fs(location)
    with tempfile.TemporaryDirectory(prefix="crawlcycle-shard-") as tmp:
        # The folder keeps the shard's name: update reads the shard number from it.
        local = Path(tmp) / remote.rstrip("/").rsplit("/", 1)[-1]
        local.mkdir()
        for name in _files(fs, remote):
            fs.get_file(f"{remote}/{name}", str(local / name))
        yield local
        if write:
            fs.makedirs(remote, exist_ok=True)
            for f in local.iterdir():
                fs.put_file(str(f), f"{remote}/{f.name}")


def read_file(location: str, name: str) -> str:
    """The text of one file of a stored shard, without staging the others; FileNotFoundError when it is missing."""
    if not is_remote(location):
        return (Path(location) / name).read_text()
    fs, remote = _fs(location)
    return fs.cat_file(f"{remote}/{name}").decode()


def storing(location: str, local_file: Path) -> Callable[[], None] | None:
    """A function that stores ``local_file`` of a staged shard into the shard at ``location`` before the stage
    ends (a file that must outlive a failed stage); None for a local shard, whose folder is the stored one."""
    if not is_remote(location):
        return None
    fs, remote = _fs(location)

    def store() -> None:
        # copied whole under a temporary name, then renamed: a kill during the copy leaves the previous copy
        fs.makedirs(remote, exist_ok=True)
        fs.put_file(str(local_file), f"{remote}/.{local_file.name}.tmp")
        fs.mv(f"{remote}/.{local_file.name}.tmp", f"{remote}/{local_file.name}")

    return store


@contextmanager
def local_shards(locations: list[str]) -> Iterator[list[Path]]:
    """Local copies of several shards, for reading (gates and update)."""
    with ExitStack() as stack:
        yield [stack.enter_context(local_shard(loc, write=False)) for loc in locations]


def _fs(location: str):  # -> (fsspec.AbstractFileSystem, path)
    import fsspec

    fs, path = fsspec.core.url_to_fs(location)
    return fs, path.rstrip("/")


def _files(fs, remote: str) -> list[str]:
    """Names of the files directly in a stored shard folder (shards are flat)."""
    if not fs.exists(remote):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(remote, detail=False) if fs.isfile(p))
