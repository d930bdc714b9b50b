"""The single writer's merge rules, on a real DuckDB file."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import polars as pl

from crawlcycle.db import connect, migrate
from crawlcycle.parse.simhash import simhash
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.pipeline.update import mark_stored_duplicates
from crawlcycle.settings import Settings
from tests.support.faultserver import FaultServer, respond

TEXT = " ".join(f"word{i}" for i in range(1000))


def test_pages_repeating_an_earlier_cycle_are_marked(settings: Settings, tmp_path: Path) -> None:
    with connect(settings) as con:
        migrate(con)
        con.execute("INSERT INTO pages (url, host, cycle, content_hash, simhash) VALUES "
                    "('http://a.test/1', 'a.test', 1, 'h1', ?), ('http://a.test/2', 'a.test', 1, 'h2', ?), "
                    "('http://a.test/empty', 'a.test', 1, NULL, NULL)",
                    [simhash(TEXT), simhash("entirely different words " * 9)])
        new = pl.DataFrame({"url": ["http://b.test/copy", "http://b.test/near", "http://b.test/new",
                                    "http://b.test/empty"],
                            "content_hash": ["h1", "h9", "h8", None],
                            "simhash": [None, simhash(TEXT.replace("word500 ", "changed ")),
                                        simhash("fresh text " * 20), None],
                            "duplicate_of": [None, None, None, None]},
                           schema_overrides={"simhash": pl.UInt64, "duplicate_of": pl.String})
        marked = mark_stored_duplicates(con, new)
    # Two empty bodies (no content hash) are not copies of each other.
    assert marked["duplicate_of"].to_list() == ["http://a.test/1", "http://a.test/1", None, None]
    assert marked["exact_copy"].to_list() == [True, False, False, False]


def test_rejected_links_and_the_per_host_cap_are_recorded(settings: Settings) -> None:
    s = replace(settings, max_urls_per_host=5)
    stages.init(s)
    stages.run_cycle(s, date(2026, 11, 1), progress=lambda m: None)
    stages.run_cycle(s, date(2026, 11, 2), progress=lambda m: None)
    with connect(s, read_only=True) as con:
        reasons = dict(con.execute("SELECT reason, count(*) FROM url_rejects GROUP BY reason").fetchall())
        # Links admit at most the cap per host (seeds and pages reached by in-line redirects come on top).
        worst = con.execute("SELECT max(n) FROM (SELECT count(*) n FROM frontier WHERE source = 'link' "
                            "GROUP BY host)").fetchall()[0][0]
    assert reasons.get("host_cap", 0) > 0 and worst <= 5


def test_transient_failures_back_off_then_mark_the_url_gone(settings: Settings, tmp_path: Path) -> None:
    server = FaultServer()  # the origin answers (robots.txt 404), its one page fails with 503 every time
    try:
        server.route("down.test", "/robots.txt", respond(404))
        server.route("down.test", "/", respond(503, b"busy"))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("http://down.test/\n")
        s = replace(settings, seeds_file=str(seeds), url_attempts=3,
                    connect_to=f"down.test=127.0.0.1:{server.port},{settings.connect_to}")
        stages.init(s)
        states = []
        for day in range(1, 6):
            stages.run_cycle(s, date(2026, 11, day), progress=lambda m: None)
            with connect(s, read_only=True) as con:
                states.append(con.execute("SELECT status, attempts, retry_after_cycle FROM frontier "
                                          "WHERE url = 'http://down.test/'").fetchall()[0])
    finally:
        server.close()
    # Tried in cycles 1, 2 and 4 (waits of 1, then 2 cycles), then given up; one failing page of an origin that
    # answers is the URL's failure, not the origin's.
    assert states == [("retry_pending", 1, 2), ("retry_pending", 2, 4), ("retry_pending", 2, 4),
                      ("gone", 3, None), ("gone", 3, None)]
    assert server.hits_of("down.test").count("/") == 3
    with connect(s, read_only=True) as con:
        assert con.execute("SELECT DISTINCT state FROM origin_tries WHERE origin = 'http://down.test'"
                           ).fetchall() == [("ok",)]


def test_a_redirect_to_a_url_waiting_in_the_frontier_crawls_it(settings: Settings, tmp_path: Path) -> None:
    server = FaultServer()
    try:
        server.route("r.test", "/robots.txt", respond(404))
        server.route("r.test", "/page", respond(200, b'<a href="/old">old</a> <a href="/target">target</a>'))
        server.route("r.test", "/old", respond(301, headers={"Location": "/target"}))
        server.route("r.test", "/target", respond(200, b"<title>Target</title><p>the target page</p>"))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("http://r.test/page\n")
        # bfs with one URL per batch: cycle 2 fetches /old alone, which redirects to /target, known since cycle 1
        s = replace(settings, seeds_file=str(seeds), policy="bfs", refresh_policy="none", batch_size=1, min_delay=0.0,
                    connect_to=f"r.test=127.0.0.1:{server.port},{settings.connect_to}")
        stages.init(s)
        stages.run_cycle(s, date(2026, 11, 1), progress=lambda m: None)
        stages.run_cycle(s, date(2026, 11, 2), progress=lambda m: None)  # the update gate checks it too
    finally:
        server.close()
    with connect(s, read_only=True) as con:
        assert con.execute("SELECT url FROM batches WHERE fetch_cycle = 2").fetchall() == [("http://r.test/old",)]
        assert con.execute("SELECT status, status_cycle FROM frontier WHERE url = 'http://r.test/target'"
                           ).fetchall() == [("fetched", 2)]
        assert con.execute("SELECT cycle FROM pages WHERE url = 'http://r.test/target'").fetchall() == [(2,)]


def test_a_link_stored_in_an_earlier_cycle_is_not_added_again(settings: Settings) -> None:
    stages.init(settings)
    stages.run_cycle(settings, date(2026, 11, 1), progress=lambda m: None)
    stages.run_cycle(settings, date(2026, 11, 2), progress=lambda m: None)
    key = "src || ' ' || dst || ' ' || anchor"
    with connect(settings) as con:
        # one of cycle 2's links, as if an earlier cycle had stored it already
        moved = con.execute(f"SELECT {key} FROM links WHERE cycle = 2 ORDER BY ALL LIMIT 1").fetchall()[0][0]
        con.execute(f"UPDATE links SET cycle = 1 WHERE {key} = ?", [moved])
        before = con.execute("SELECT count(*) FROM links").fetchall()[0][0]
    stages.update_tables(settings, 2, shard_storage.stored_shards(settings, 2))
    with connect(settings, read_only=True) as con:
        assert con.execute(f"SELECT cycle FROM links WHERE {key} = ?", [moved]).fetchall() == [(1,)]
        assert con.execute("SELECT count(*) FROM links").fetchall()[0][0] == before
        assert con.execute("SELECT count(*) FROM (SELECT DISTINCT src, dst, anchor FROM links)").fetchall()[0][0] \
            == before
