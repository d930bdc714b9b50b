"""Data-quality gates between stages.

Each expectation is a SQL file ``sql/gates/<stage>/<expectation>.sql`` that selects the rows
violating it; a gate passes when every expectation selects nothing. Fetch and parse gates read the
shards' Parquet files (staged as ``g_*`` views); update and materialize gates read the tables.
Results go to ``dq_results``; a failing gate raises :class:`GateFailed` naming each failed
expectation, how many rows, and a few examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from crawlcycle.canonical import UrlRejected, canonicalize, host_of
from crawlcycle.db import SQL_DIR, execute, statements
from crawlcycle.materialize import stored_robots_rules
from crawlcycle.settings import Settings

STAGES = ("fetch", "parse", "update", "materialize")
_EXAMPLES = 3

# Shard files each gate reads, and the columns an empty stand-in must have when a cycle has no shards.
_SHARD_VIEWS = {
    "fetch": {"g_fetch_log": ("fetch_log.parquet", "url VARCHAR, status INTEGER, outcome VARCHAR, "
                                                   "error_class VARCHAR, content_type VARCHAR"),
              "g_requests": ("requests.parquet", "host VARCHAR, url VARCHAR, started_at DOUBLE, finished_at DOUBLE"),
              "g_hosts": ("hosts.parquet", "host VARCHAR, crawl_delay DOUBLE")},
    "parse": {"g_pages": ("pages.parquet", "url VARCHAR"),
              "g_links": ("links.parquet", "src VARCHAR, dst VARCHAR, anchor VARCHAR")},
}


class GateFailed(RuntimeError):
    """A quality gate found bad data; the message says which expectation and which rows."""


@dataclass(frozen=True)
class Outcome:
    expectation: str
    failed_rows: int
    examples: list[tuple]
    columns: list[str]

    @property
    def success(self) -> bool:
        return self.failed_rows == 0

    def describe(self) -> str:
        shown = "; ".join(", ".join(f"{c}={v}" for c, v in zip(self.columns, row, strict=True))
                          for row in self.examples)
        return f"{self.expectation}: {self.failed_rows} rows, e.g. {shown}"


def expectations(stage: str) -> list[str]:
    return sorted(p.stem for p in (SQL_DIR / "gates" / stage).glob("*.sql"))


def _stage_shard_views(con: duckdb.DuckDBPyConnection, stage: str, shard_dirs: list[Path]) -> None:
    for view, (name, empty_columns) in _SHARD_VIEWS.get(stage, {}).items():
        files = [str(d / name).replace("'", "''") for d in shard_dirs if (d / name).exists()]
        if files:
            # A view cannot take parameters: the file list is written in as quoted literals.
            listed = ", ".join(f"'{f}'" for f in files)
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS "
                        f"SELECT * FROM read_parquet([{listed}], union_by_name=true)")
        else:
            nulls = ", ".join(f"NULL::{c.split()[1]} AS {c.split()[0]}" for c in empty_columns.split(", "))
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {nulls} WHERE false")


def _register_functions(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    rules = stored_robots_rules(con, settings)

    def canon(url: str) -> str | None:
        try:
            return canonicalize(url, settings=settings)
        except UrlRejected:
            return None

    def robots_allowed(url: str) -> bool:
        host = host_of(url)
        return host not in rules or rules[host].allowed(url)

    con.create_function("canon", canon, ["VARCHAR"], "VARCHAR", null_handling="special")
    con.create_function("robots_allowed", robots_allowed, ["VARCHAR"], "BOOLEAN")


def evaluate(con: duckdb.DuckDBPyConnection, settings: Settings, stage: str, cycle: int,
             shard_dirs: list[Path]) -> list[Outcome]:
    """Evaluate every expectation of ``stage`` without recording anything."""
    if stage not in STAGES:
        raise ValueError(f"unknown gate {stage!r}; choose one of {', '.join(STAGES)}")
    _stage_shard_views(con, stage, shard_dirs)
    _register_functions(con, settings)
    params = {"cycle": cycle, "batch_size": settings.batch_size, "per_host_cap": settings.per_host_cap,
              "min_delay": settings.min_delay, "max_delay": settings.max_delay}
    outcomes = []
    try:
        for name in expectations(stage):
            (stmt,) = statements(f"gates/{stage}/{name}")
            cur = execute(con, f"SELECT * FROM ({stmt})", **params)
            columns = [d[0] for d in cur.description]
            rows = cur.fetchall()
            outcomes.append(Outcome(name, len(rows), rows[:_EXAMPLES], columns))
    finally:
        con.remove_function("canon")
        con.remove_function("robots_allowed")
    return outcomes


def run_gate(con: duckdb.DuckDBPyConnection, settings: Settings, stage: str, cycle: int,
             shard_dirs: list[Path]) -> list[Outcome]:
    """Evaluate, store in dq_results (replacing this gate's earlier rows), and raise on failure."""
    outcomes = evaluate(con, settings, stage, cycle, shard_dirs)
    con.execute("DELETE FROM dq_results WHERE cycle = ? AND gate = ?", [cycle, stage])
    con.executemany("INSERT INTO dq_results (cycle, gate, expectation, success, severity, failed_rows, examples) "
                    "VALUES (?, ?, ?, ?, 'fail', ?, ?)",
                    [[cycle, stage, o.expectation, o.success, o.failed_rows, o.describe() if o.failed_rows else None]
                     for o in outcomes])
    failed = [o for o in outcomes if not o.success]
    if failed:
        raise GateFailed(f"gate {stage} failed for cycle {cycle}: " + " | ".join(o.describe() for o in failed))
    return outcomes
