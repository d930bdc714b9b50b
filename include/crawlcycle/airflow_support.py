"""What the DAG files need from the package, kept light: the DAG parser imports it on every parse."""

from __future__ import annotations

from datetime import date
from typing import Any

from crawlcycle.settings import Settings, load_settings

DUCKDB_POOL = "crawl_duckdb"


def dag_settings() -> Settings:
    """Settings read at DAG parse time (schedule and start date); no I/O beyond the TOML file."""
    return load_settings()


def run_interval(context: dict[str, Any]) -> tuple[date, date | None, str]:
    """(interval start, interval end, run id) of the running DAG run.

    Scheduled runs and backfills have a data interval; a manual run without one uses the date it was
    triggered for, so triggering the same day again replays that day's cycle.
    """
    start = context.get("data_interval_start") or context.get("logical_date") or context["dag_run"].run_after
    end = context.get("data_interval_end")
    return start.date(), end.date() if end else None, context["run_id"]
