"""A task that runs out of disk space fails with one line: where it was writing and what was free there. What it
had written is rolled back (DuckDB) or left under a temporary name that is removed (shard files), so the retry,
once space is freed, starts from the state before the task."""

from __future__ import annotations

import errno
import functools
import inspect
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from crawlcycle.contracts.errors import InputError
from crawlcycle.settings import Settings

_NO_SPACE = ("No space left on device", "os error 28")
_QUOTED_PATH = re.compile(r"\"(/[^\"]+)\"|'(/[^']+)'")
F = TypeVar("F", bound=Callable[..., Any])


class DiskFullError(InputError):
    """The disk under a path the task writes is full; the message is one line."""


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


def reports_disk_full(stage: F) -> F:
    """Turn a full disk met by ``stage`` (settings first; a shard stage's folder next, as ``shard_dir``) into a
    DiskFullError with ``message``'s line."""
    on_shard = list(inspect.signature(stage).parameters)[1:2] == ["shard_dir"]

    @functools.wraps(stage)
    def run(settings: Settings, *args: Any, **kwargs: Any) -> Any:
        shard = kwargs.get("shard_dir", args[0] if args else None) if on_shard else None
        try:
            return stage(settings, *args, **kwargs)
        except Exception as e:
            if not _no_space(e):
                raise
            raise DiskFullError(message(settings, e, shard)) from None

    return run  # type: ignore[return-value]
