"""What a user's own DAG downstream of the crawl does with a closed cycle: ``dags/export_pages.py`` runs
:func:`export_pages` each time a cycle's close updates the crawl-state asset."""

from __future__ import annotations

from pathlib import Path

from crawlcycle.contracts.shard_files import replacing
from crawlcycle.db import connect, query
from crawlcycle.settings import Settings


def export_pages(settings: Settings, cycle: int) -> Path:
    """Write the pages cycle ``cycle`` stored first to ``<data_dir>/exports/pages-cycle-<cycle>.parquet`` (whole,
    or not at all); return the path."""
    with connect(settings, read_only=True) as con:
        pages = query(con, "pipeline/export/cycle_pages", cycle=cycle)
    path = Path(settings.data_dir) / "exports" / f"pages-cycle-{cycle}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        pages.write_parquet(tmp)
    return path
