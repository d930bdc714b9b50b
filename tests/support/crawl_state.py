"""Small crawl states built by hand in a real DuckDB file: frontier URLs, fetched pages and links."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb

from crawlcycle.db import connect, migrate
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT

DAY = date(2026, 11, 1)


def new_state(tmp_path: Path, policy: str, **overrides: object) -> Settings:
    """A migrated crawl database under ``tmp_path`` with cycle 1 of ``policy`` running; its batches take new URLs
    only unless ``refresh_policy`` says otherwise."""
    s = load_settings(overrides={"user_agent": USER_AGENT, "db_path": str(tmp_path / "crawl.duckdb"),
                                 "data_dir": str(tmp_path / "data"), "refresh_policy": "none", "policy": policy,
                                 **overrides},
                      environ={})
    with connect(s) as con:
        migrate(con)
        con.execute("INSERT INTO cycles (cycle, interval_start, policy, status) VALUES (1, ?, ?, 'running')",
                    [DAY, policy])
    return s


def add_urls(con: duckdb.DuckDBPyConnection, urls: list[str], cycle_no: int = 0, contacted: bool = True) -> None:
    """Frontier URLs found by links; their origins answered a try in cycle ``cycle_no`` unless not ``contacted``
    (then none of them may take a batch slot before a probe answers)."""
    con.execute("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source) "
                "SELECT u, split_part(u, '/', 3), ?, (SELECT coalesce(max(discovery_seq), 0) FROM frontier) + i, "
                "'link' FROM (SELECT unnest(?) AS u, generate_subscripts(?, 1) AS i)", [cycle_no, urls, urls])
    if contacted:
        con.execute("INSERT INTO origin_tries (cycle, origin, host, probe, failures, state) "
                    "SELECT DISTINCT ?, url_origin(u), split_part(u, '/', 3), true, 0, 'ok' FROM unnest(?) t(u) "
                    "ON CONFLICT DO NOTHING", [cycle_no, urls])


def add_page(con: duckdb.DuckDBPyConnection, url: str, title: str, text: str) -> None:
    con.execute("INSERT INTO pages (url, host, cycle, status, title, text, content_hash) "
                "VALUES (?, ?, 1, 200, ?, ?, ?)", [url, url.split("/")[2], title, text, url])
    con.execute("UPDATE frontier SET status = 'fetched', status_cycle = 1 WHERE url = ?", [url])


def add_links(con: duckdb.DuckDBPyConnection, links: list[tuple[str, str, str]], cycle_no: int = 1) -> None:
    con.executemany("INSERT INTO links (src, dst, anchor, cycle) VALUES (?, ?, ?, ?)",
                    [(*link, cycle_no) for link in links])
