"""Content hashes of the crawl database's tables: a replayed interval, or a run that was killed and retried, must
leave the same rows as a run that went through once."""

from __future__ import annotations

import hashlib

from crawlcycle.db import connect
from crawlcycle.settings import Settings

# Wall-clock times, timings and memory differ between two runs by nature, and so do the settings a cycle recorded
# between two crawls (each names its own files and folders); every other column must not.
VOLATILE = {"cycles": ("started_at", "finished_at", "stage_seconds", "stage_memory_mib", "settings"),
            "fetch_log": ("started_at", "finished_at", "elapsed_ms"),
            "fetch_requests": ("started_at", "finished_at"),
            "hosts": ("delay", "last_response_ms", "backoff_until", "last_request_at"),
            "robots": ("fetched_at",), "origin_tries": ("tried_at",), "model_runs": ("created_at",),
            "pages": ("fetched_at",), "replaced_pages": ("fetched_at",),
            "dq_results": ("created_at", "examples"),
            "schema_migrations": ("applied_at",)}
# Rows kept of a table, where a second run keeps the first run's rows by nature: the requests of a killed (or
# replayed) fetch reached their servers, so fetch_requests holds them under a lower ``attempt``, and one in flight
# at the kill without an end (it may never have reached its server); the ended requests of each host's last attempt
# are what a straight run sent.
KEPT = {"fetch_requests": "finished_at IS NOT NULL AND attempt = (SELECT max(attempt) FROM fetch_requests l "
                          "WHERE l.cycle = t.cycle AND l.host = t.host AND l.finished_at IS NOT NULL)"}


def table_rows(settings: Settings, ignore: dict[str, tuple[str, ...]] | None = None) -> dict[str, list[tuple]]:
    """The rows of every table in the database's catalog, sorted, wall-clock columns left out, and those ``ignore``
    names (and of a table in ``KEPT``, only the rows it says)."""
    volatile = {t: VOLATILE.get(t, ()) + (ignore or {}).get(t, ()) for t in VOLATILE.keys() | (ignore or {}).keys()}
    with connect(settings, read_only=True) as con:
        tables = [t for t, in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary "
                                          "ORDER BY table_name").fetchall()]
        missing = VOLATILE.keys() - set(tables)
        if missing:
            raise AssertionError(f"tables named in VOLATILE are gone: {sorted(missing)}")
        out = {}
        for t in tables:
            columns = f"* EXCLUDE ({', '.join(volatile[t] + (('attempt',) if t in KEPT else ()))})" \
                if t in volatile else "*"
            out[t] = con.execute(f"SELECT {columns} FROM {t} t WHERE {KEPT.get(t, 'true')} ORDER BY ALL").fetchall()
        return out


def table_digest(settings: Settings) -> dict[str, str]:
    """SHA-256 of each table's rows as ``table_rows`` gives them."""
    return {t: hashlib.sha256(repr(rows).encode()).hexdigest() for t, rows in table_rows(settings).items()}
