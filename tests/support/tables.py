"""Content hashes of the crawl database's tables, to check that replaying an interval changes nothing."""

from __future__ import annotations

import hashlib

from crawlcycle.db import connect
from crawlcycle.settings import Settings

# Wall-clock times and timings differ between two runs by nature; every other column must not.
VOLATILE = {"cycles": ("started_at", "finished_at", "stage_seconds"),
            "fetch_log": ("started_at", "finished_at", "elapsed_ms"),
            "fetch_requests": ("started_at", "finished_at"),
            "hosts": ("delay", "last_response_ms", "backoff_until", "last_request_at"),
            "robots": ("fetched_at",), "origin_tries": ("tried_at",), "model_runs": ("created_at",),
            "dq_results": ("created_at", "examples"),
            "schema_migrations": ("applied_at",)}


def table_digest(settings: Settings) -> dict[str, str]:
    """SHA-256 of the rows of every table in the database's catalog (so every table with a cycle column among
    them), in a fixed order, wall-clock columns left out."""
    with connect(settings, read_only=True) as con:
        tables = [t for t, in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary "
                                          "ORDER BY table_name").fetchall()]
        assert VOLATILE.keys() <= set(tables), sorted(VOLATILE.keys() - set(tables))
        out = {}
        for t in tables:
            columns = f"* EXCLUDE ({', '.join(VOLATILE[t])})" if t in VOLATILE else "*"
            rows = con.execute(f"SELECT {columns} FROM {t} ORDER BY ALL").fetchall()
            out[t] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return out
