"""Content hashes of the crawl state tables, to check that replaying an interval changes nothing."""

from __future__ import annotations

import hashlib

from crawlcycle.db import connect
from crawlcycle.settings import Settings

STATE_TABLES = ("frontier", "pages", "links", "hosts", "robots", "sitemap_fetches", "batches", "frontier_scores",
                "query_log", "needy_queries", "model_runs", "dq_results", "query_results", "url_rejects",
                "posting_docs", "postings", "posting_terms", "posting_fields", "posting_lengths", "query_improvement",
                "url_ngrams", "sketches", "opic_cash", "needy_candidates")
# Timings and wall-clock columns differ between runs by nature; everything else must not.
_VOLATILE = {"hosts": "* EXCLUDE (delay, last_response_ms, backoff_until, last_request_at)",
             "robots": "* EXCLUDE (fetched_at)",
             "model_runs": "* EXCLUDE (created_at)", "dq_results": "* EXCLUDE (created_at, examples)"}


def table_digest(settings: Settings) -> dict[str, str]:
    """SHA-256 of each state table's rows in a fixed order, wall-clock columns left out."""
    with connect(settings, read_only=True) as con:
        out = {}
        for t in STATE_TABLES:
            rows = con.execute(f"SELECT {_VOLATILE.get(t, '*')} FROM {t} ORDER BY ALL").fetchall()
            out[t] = hashlib.sha256(repr(rows).encode()).hexdigest()
        return out
