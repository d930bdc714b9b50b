"""The single writer's merge rules, on a real DuckDB file."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import polars as pl

from crawlcycle import cycle
from crawlcycle.db import connect, migrate
from crawlcycle.settings import Settings
from crawlcycle.simhash import simhash
from crawlcycle.update import mark_stored_duplicates

TEXT = " ".join(f"word{i}" for i in range(1000))


def test_pages_repeating_an_earlier_cycle_are_marked(settings: Settings, tmp_path: Path) -> None:
    with connect(settings) as con:
        migrate(con)
        con.execute("INSERT INTO pages (url, host, cycle, content_hash, simhash) VALUES "
                    "('http://a.test/1', 'a.test', 1, 'h1', ?), ('http://a.test/2', 'a.test', 1, 'h2', ?)",
                    [simhash(TEXT), simhash("entirely different words " * 9)])
        new = pl.DataFrame({"url": ["http://b.test/copy", "http://b.test/near", "http://b.test/new"],
                            "content_hash": ["h1", "h9", "h8"],
                            "simhash": [None, simhash(TEXT.replace("word500 ", "changed ")),
                                        simhash("fresh text " * 20)],
                            "duplicate_of": [None, None, None]},
                           schema_overrides={"simhash": pl.UInt64, "duplicate_of": pl.String})
        marked = mark_stored_duplicates(con, new)
    assert marked["duplicate_of"].to_list() == ["http://a.test/1", "http://a.test/1", None]


def test_rejected_links_and_the_per_host_cap_are_recorded(settings: Settings) -> None:
    s = replace(settings, max_urls_per_host=5)
    cycle.init(s)
    cycle.run_cycle(s, date(2026, 11, 1), progress=lambda m: None)
    cycle.run_cycle(s, date(2026, 11, 2), progress=lambda m: None)
    with connect(s, read_only=True) as con:
        reasons = dict(con.execute("SELECT reason, count(*) FROM url_rejects GROUP BY reason").fetchall())
        # Links admit at most the cap per host (seeds and pages reached by in-line redirects come on top).
        worst = con.execute("SELECT max(n) FROM (SELECT count(*) n FROM frontier WHERE source = 'link' "
                            "GROUP BY host)").fetchall()[0][0]
    assert reasons.get("host_cap", 0) > 0 and worst <= 5
