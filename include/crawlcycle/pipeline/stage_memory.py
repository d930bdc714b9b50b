"""The memory a stage takes: how far its process's resident set rose above where it stood when the stage started,
at its peak. Linux keeps a process's peak resident set (``VmHWM``) and lets the process reset it to the present one
(``/proc/self/clear_refs``), so the peak is the stage's own, not the process's since it started. Elsewhere it is
not measured (None).

A stage's memory is mostly DuckDB's (up to ``duckdb_memory_limit``, beyond which a statement spills to disk or the
stage stops) and the frames its Python code holds. A process that held the database open for earlier stages keeps
DuckDB's cached blocks: there a later stage rises less than in a task process of its own."""

from __future__ import annotations

from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kb(field: str) -> int | None:
    try:
        line = next(line for line in _STATUS.read_text().splitlines() if line.startswith(f"{field}:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1])


def start() -> int | None:
    """Reset the process's peak resident set to the present one and return that, in kB; None where it cannot."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return None
    return _status_kb("VmRSS")


def added_mib(started: int | None) -> float | None:
    """MiB the process's peak resident set since ``start`` rose above the resident set then."""
    peak = _status_kb("VmHWM") if started is not None else None
    return None if peak is None else round(max(0, peak - started) / 1024, 1)
