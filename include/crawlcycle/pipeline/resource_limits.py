"""A task that runs out of disk space or of DuckDB's memory fails with one line: for a full disk, where it was writing
and what was free there; for memory, the task, the setting to raise and its value. What it had written is rolled
back (DuckDB: every DB stage writes in one transaction) or left under a temporary name that is removed (shard
files), so the retry, once space is freed or the limit raised, starts from the state before the task."""

from __future__ import annotations

import errno
import functools
import inspect
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from crawlcycle.contracts.errors import InputError
from crawlcycle.pipeline.stage_order import STAGE_ORDER
from crawlcycle.settings import Settings

_NO_SPACE = ("No space left on device", "os error 28")
_QUOTED_PATH = re.compile(r"\"(/[^\"]+)\"|'(/[^']+)'")
F = TypeVar("F", bound=Callable[..., Any])


class DiskFullError(InputError):
    """The disk under a path the task writes is full; the message is one line."""


class OutOfMemoryError(InputError):
    """A statement of the task needed more memory than duckdb_memory_limit gives; the message is one line."""


def _no_space(error: BaseException) -> bool:
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or any(t in str(error) for t in _NO_SPACE)


def message(settings: Settings, error: BaseException, shard: str | None = None) -> str:
    """One line for a task that met a full disk: the path it wrote (from the error, else the task's shard folder or
    the database file), the free space of its filesystem, and what to do."""
    quoted = _QUOTED_PATH.search(str(error))
    path = Path(getattr(error, "filename", None) or (quoted and (quoted[1] or quoted[2])) or shard or settings.db_path)
    folder = next((p for p in (path, *path.parents) if p.exists()), Path("/"))
    usage = shutil.disk_usage(folder)
    return (f"disk full: writing {path} needs more than the {usage.free / 2**20:.2f} MiB free of "
            f"{usage.total / 2**20:.0f} MiB on its filesystem; free space there and retry the task (nothing it "
            "wrote was kept)")


def memory_message(settings: Settings, task: str, error: duckdb.OutOfMemoryException) -> str:
    """One line for a task that DuckDB's memory limit stopped: the task, the setting and its value, DuckDB's own
    reason (what it could not allocate, and how much was in use), and what to do. A begun cycle's tasks take the
    limit from its record or the environment of the machine running them, so the cycle is run again from begin."""
    reason = str(error).splitlines()[0].removeprefix("Out of Memory Error: ")
    return (f"out of memory: task {task} needs more than duckdb_memory_limit = {settings.duckdb_memory_limit} "
            f"(DuckDB: {reason}); raise it in the settings file or CRAWLCYCLE_DUCKDB_MEMORY_LIMIT and run the cycle "
            "again (nothing the task wrote was kept)")


def _out_of_memory(error: BaseException | None) -> duckdb.OutOfMemoryException | None:
    """DuckDB's memory limit, where ``error`` is it or what it met while being handled (a cleanup that the limit's
    aborted transaction refused)."""
    while error is not None and not isinstance(error, duckdb.OutOfMemoryException):
        error = error.__context__
    return error


def _task_name(stage: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The task of STAGE_ORDER that runs ``stage``; for the gate of one stage (``args[0]``), the gate task of it."""
    if stage.__name__ == "gate":
        return next((t.name for t in STAGE_ORDER if args and args[0] in t.gates), "gate")
    return next((t.name for t in STAGE_ORDER if t.function.endswith(f":{stage.__name__}")), stage.__name__)


def reports_exhaustion(stage: F) -> F:
    """Turn a full disk or DuckDB's memory limit met by ``stage`` (settings first; a shard stage's folder next, as
    ``shard_dir``) into a DiskFullError with ``message``'s line, or an OutOfMemoryError with ``memory_message``'s."""
    on_shard = list(inspect.signature(stage).parameters)[1:2] == ["shard_dir"]

    @functools.wraps(stage)
    def run(settings: Settings, *args: Any, **kwargs: Any) -> Any:
        shard = kwargs.get("shard_dir", args[0] if args else None) if on_shard else None
        try:
            return stage(settings, *args, **kwargs)
        except Exception as e:
            if memory := _out_of_memory(e):
                raise OutOfMemoryError(memory_message(settings, _task_name(stage, args), memory)) from None
            if not _no_space(e):
                raise
            raise DiskFullError(message(settings, e, shard)) from None

    return run  # type: ignore[return-value]
