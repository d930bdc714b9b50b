"""The snapshot of the crawl state that the Crawl page shows, written by the close stage of every cycle.

While a task has the DuckDB file open read-write, any other open of it fails, so the page never opens it: the close
stage calls :func:`export_snapshot`, which writes the tables the page shows (queries in
``sql/pipeline/crawl_snapshot/``) to ``<data_dir>/ui/snapshot.json`` through a temporary file renamed into place
(``shard_files.replacing``), so that a reader sees the previous snapshot or the new one, never part of one.

``snapshot.json``: ``{"cycle": N, "exported_at": ISO time, "tables": {name: [row, ...]}}`` with one entry per
name in :data:`TABLES`; JSON columns (``parts``, ``metrics``, ``stage_seconds``, ``slots_failed``,
``slots_skipped``) are objects.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from crawlcycle.contracts.shard_files import replacing
from crawlcycle.db import query
from crawlcycle.settings import Settings

TABLES = ("cycles", "fetch_errors", "gates", "gate_problems", "batch", "needy_queries", "hosts", "origins_held",
          "model_runs", "settings")
_JSON_COLUMNS = ("parts", "metrics", "stage_seconds", "slots_failed", "slots_skipped")


def snapshot_path(settings: Settings) -> Path:
    return Path(settings.data_dir) / "ui" / "snapshot.json"


def export_snapshot(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> Path:
    """Write the Crawl page's tables as they stand at the end of ``cycle``; replaces the previous snapshot."""
    tables = {name: _records(query(con, f"pipeline/crawl_snapshot/{name}")) for name in TABLES}
    doc = {"cycle": cycle, "exported_at": datetime.now(UTC).isoformat(timespec="seconds"), "tables": tables}
    path = snapshot_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        tmp.write_text(json.dumps(doc, default=str))
    return path


def _records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    rows = frame.to_dicts()
    for row in rows:
        for col in _JSON_COLUMNS:
            if isinstance(row.get(col), str):
                row[col] = json.loads(row[col])
    return rows


def load_snapshot(settings: Settings) -> dict | None:
    path = snapshot_path(settings)
    return json.loads(path.read_text()) if path.is_file() else None
