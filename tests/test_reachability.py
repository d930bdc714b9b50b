"""Batch slots go to URLs that can be fetched: origins that do not answer are backed off across cycles and probed
outside the batch, new origins answer a probe before their URLs take slots, and the crawl scope refuses URLs with a
reason. Whole cycles against sites served by a FaultServer on loopback, checked in the real DuckDB file."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest

from crawlcycle.db import SQL_DIR, connect, migrate
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings, SettingsError
from crawlcycle.settings.sources import load_settings, with_overrides
from tests.support.demo import USER_AGENT
from tests.support.faultserver import FaultServer, respond
from tests.support.net import free_port

DAY1 = date(2026, 11, 1)


def html(title: str, hrefs: list[str]) -> bytes:
    links = "".join(f'<li><a href="{h}">{title} link {i}</a></li>' for i, h in enumerate(hrefs))
    return f"<html><head><title>{title}</title></head><body><p>{title} text</p><ul>{links}</ul></body></html>".encode()


def chain(prefix: str = "/p"):
    """Pages ``/p1``, ``/p2``, ... each linking to the next: a host that always has one more URL to fetch."""
    def handle(conn: socket.socket, path: str) -> bool:
        n = int(path.removeprefix(prefix) or 0)
        return respond(200, html(f"chain page {n}", [f"{prefix}{n + 1}"]))(conn, path)
    return handle


def pages(title: str):
    """A page of its own at every path (a copy of another page would be a duplicate)."""
    def handle(conn: socket.socket, path: str) -> bool:
        return respond(200, html(f"{title} {path}", []))(conn, path)
    return handle


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer()
    yield s
    s.close()


def crawl_settings(tmp_path: Path, server: FaultServer, seeds: list[str], **overrides: object) -> Settings:
    (tmp_path / "seeds.txt").write_text("".join(f"{u}\n" for u in seeds))
    (tmp_path / "query_log").mkdir(exist_ok=True)  # no partition: these crawls run without queries
    values = {"user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{server.port}",
              "allow_networks": "127.0.0.0/8", "min_delay": 0.0, "delay_factor": 0.0,
              "db_path": str(tmp_path / "crawl.duckdb"), "data_dir": str(tmp_path / "data"),
              "seeds_file": str(tmp_path / "seeds.txt"), "query_log_dir": str(tmp_path / "query_log"),
              "policy": "bfs", "batch_size": 10, "per_host_cap": 10, "shards": 2, "parse_workers": 1,
              "sitemap_fallback": False, "gate_warn": "error_share",
              "refresh_policy": "none", **overrides}  # these crawls study new URLs; refreshes would share their slots
    return load_settings(overrides=values, environ={})


def run_cycles(settings: Settings, cycles: int, first: int = 1) -> None:
    for k in range(first, first + cycles):
        stages.run_cycle(settings, DAY1 + timedelta(days=k - 1), progress=lambda m: None)


def rows(settings: Settings, sql: str, params: list | None = None) -> list[tuple]:
    with connect(settings, read_only=True) as con:
        return con.execute(sql, params).fetchall()


def test_an_origin_whose_robots_txt_keeps_failing_is_probed_once_per_back_off_then_comes_back(
        tmp_path: Path, server: FaultServer) -> None:
    answers = iter([500, 500, 500])  # then 404: no robots.txt, everything allowed

    def flaky_robots(conn: socket.socket, path: str) -> bool:
        return respond(next(answers, 404), b"")(conn, path)

    flaky = [f"http://flaky.test/{i}" for i in range(5)]
    server.route("home.test", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [*flaky, "/p1"])))
    server.route("home.test", "/p*", chain())
    server.route("flaky.test", "/robots.txt", flaky_robots)
    server.route("flaky.test", "/*", pages("flaky"))
    s = crawl_settings(tmp_path, server, ["http://home.test/"], origin_retry_cycles=1, origin_park_after=3,
                       origin_park_cycles=2)
    stages.init(s)
    held = {}
    for k in range(1, 9):
        run_cycles(s, 1, first=k)
        held[k] = rows(s, "SELECT state, failures, last_error, next_try_cycle, waiting_urls FROM v_origins_held "
                          "WHERE origin = 'http://flaky.test'")
    # found in cycle 1; its robots.txt asked alone in cycles 2 and 3 (one cycle of back-off), 5 (two: parked after
    # the third failure) and 7 (the parked wait), where it answers; its URLs take slots in cycle 8 only
    asked = rows(s, "SELECT cycle, url FROM fetch_requests WHERE host = 'flaky.test' ORDER BY started_at")
    assert asked == [(2, "http://flaky.test/robots.txt"), (3, "http://flaky.test/robots.txt"),
                     (5, "http://flaky.test/robots.txt"), (7, "http://flaky.test/robots.txt"),
                     *[(8, u) for u in flaky]]
    assert server.hits_of("flaky.test")[:4] == ["/robots.txt"] * 4
    assert rows(s, "SELECT DISTINCT fetch_cycle FROM batches WHERE host = 'flaky.test'") == [(8,)]
    assert rows(s, "SELECT cycle, probes, slots_unanswered FROM cycles ORDER BY cycle") == [
        (1, 0, 0), (2, 1, 0), (3, 1, 0), (4, 0, 0), (5, 1, 0), (6, 0, 0), (7, 1, 0), (8, 0, 0)]
    assert held[3] == [("backoff", 2, "robots_server_error", 5, 5)]
    assert held[5] == held[6] == [("parked", 3, "robots_server_error", 7, 5)]
    assert held[7] == held[8] == []
    # none of its URLs was lost or spent an attempt while it was held: all five fetched in cycle 8
    assert rows(s, "SELECT status, attempts, count(*) FROM frontier WHERE host = 'flaky.test' GROUP BY ALL") == [
        ("fetched", 0, 5)]
    assert rows(s, "SELECT probe, state FROM origin_tries WHERE origin = 'http://flaky.test' ORDER BY cycle") == [
        (True, "backoff"), (True, "backoff"), (True, "parked"), (True, "ok"), (False, "ok")]


def test_new_origins_are_probed_within_a_budget_by_their_best_url_before_taking_slots(
        tmp_path: Path, server: FaultServer) -> None:
    hosts = [f"n{i}.test" for i in range(5)]
    server.route("home.test", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [f"http://{h}/page" for h in hosts] + ["/p1"])))
    server.route("home.test", "/p*", chain())
    for h in hosts:
        server.route(h, "/robots.txt", respond(404))
        server.route(h, "/page", respond(200, html(h, [])))
    s = crawl_settings(tmp_path, server, ["http://home.test/"], origin_probes=2)
    stages.init(s)
    run_cycles(s, 5)
    # bfs: the earlier a URL was found, the higher its priority; the two best new origins are probed each cycle
    assert rows(s, "SELECT fetch_cycle, list(host ORDER BY host), list(reason) FROM probes GROUP BY ALL "
                   "ORDER BY 1") == [
        (2, ["n0.test", "n1.test"], ["new", "new"]), (3, ["n2.test", "n3.test"], ["new", "new"]),
        (4, ["n4.test"], ["new"])]
    fetched = dict(rows(s, "SELECT host, cycle FROM fetch_log WHERE host LIKE 'n%'"))
    assert fetched == {"n0.test": 3, "n1.test": 3, "n2.test": 4, "n3.test": 4, "n4.test": 5}
    for h in hosts:  # robots.txt first, once, then the page
        assert server.hits_of(h) == ["/robots.txt", "/page"]
    assert rows(s, "SELECT count(*) FROM origin_tries WHERE probe AND host LIKE 'n%' AND state = 'ok'") == [(5,)]


def test_an_origin_that_answers_but_gives_no_page_gets_one_slot_when_its_back_off_ends(
        tmp_path: Path, server: FaultServer) -> None:
    empty = [f"http://empty.test/{i}" for i in range(8)]
    server.route("home.test", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [*empty, "/p1"])))
    server.route("home.test", "/p*", chain())
    server.route("empty.test", "/robots.txt", respond(404))  # everything else answers 404 too
    s = crawl_settings(tmp_path, server, ["http://home.test/"], per_host_cap=4, origin_retry_cycles=1)
    stages.init(s)
    run_cycles(s, 6)
    per_cycle = dict(rows(s, "SELECT fetch_cycle, count(*) FROM batches WHERE host = 'empty.test' GROUP BY 1"))
    # probed in 2, four slots in 3 (all 404), then one slot when each back-off ends: cycles 4 and 6
    assert per_cycle == {3: 4, 4: 1, 6: 1}
    assert server.hits_of("empty.test").count("/robots.txt") == 1
    assert rows(s, "SELECT cycle, error_class, failures, next_try_cycle FROM origin_tries "
                   "WHERE origin = 'http://empty.test' ORDER BY cycle") == [
        (2, None, 0, None), (3, "no_pages", 1, 4), (4, "no_pages", 2, 6), (6, "no_pages", 3, 10)]
    # cycle 3: four slots without a page, one page of the chain
    assert rows(s, "SELECT batch_size, slots_fetched, slots_failed, slots_skipped, slots_unanswered, waste_share "
                   "FROM cycles WHERE cycle = 3") == [(5, 1, '{"http_4xx":4}', "{}", 0, 0.8)]


def test_a_directory_of_broken_links_is_held_after_two_refusals_then_retried_one_url_at_a_time(
        tmp_path: Path, server: FaultServer) -> None:
    gone = [f"/gone/{i}" for i in range(1, 11)]  # nothing there: the FaultServer answers 404
    server.route("home.test", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [*gone, "/docs/a", "/docs/b", "/p1"])))
    server.route("home.test", "/docs/*", pages("docs"))
    server.route("home.test", "/p*", chain())
    s = crawl_settings(tmp_path, server, ["http://home.test/"], per_host_cap=4)
    stages.init(s)
    run_cycles(s, 3)
    assert rows(s, "SELECT path_group, refusals, held_tries, next_try_cycle, waiting_urls FROM v_paths_held") == [
        ("http://home.test/gone/*", 5, 2, 5, 5)]
    run_cycles(s, 2, first=4)
    per_cycle = dict(rows(s, "SELECT fetch_cycle, count(*) FROM batches WHERE url LIKE '%/gone/%' GROUP BY 1"))
    # four in cycle 2 (the per-host cap), then one when each back-off ends; the pages beside them are fetched
    assert per_cycle == {2: 4, 3: 1, 5: 1}
    assert rows(s, "SELECT count(*) FROM pages WHERE url LIKE '%/docs/%'") == [(2,)]
    assert rows(s, "SELECT count(*) FROM frontier WHERE url LIKE '%/gone/%' AND status = 'unfetched'") == [(4,)]


def test_a_new_directory_is_tried_on_a_few_urls_first_and_the_rest_wait_behind_other_candidates(
        tmp_path: Path, server: FaultServer) -> None:
    server.route("home.test", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [*(f"/a/{i}" for i in range(1, 7)), "/b/1", "/b/2"])))
    server.route("home.test", "/*", pages("page"))
    s = crawl_settings(tmp_path, server, ["http://home.test/"], batch_size=6)
    stages.init(s)
    run_cycles(s, 2)
    batch = [u.removeprefix("http://home.test") for u, in rows(s, "SELECT url FROM batches WHERE fetch_cycle = 2 "
                                                                   "ORDER BY rank")]
    # bfs ranks all of /a/ above /b/; four of /a/ go first (new_path_slots), then /b/, and /a/5 and /a/6 wait
    assert batch == ["/a/1", "/a/2", "/a/3", "/a/4", "/b/1", "/b/2"]
    # /a/ gave pages: nothing holds the rest back any more
    assert rows(s, "SELECT url FROM batches WHERE fetch_cycle = 3 ORDER BY rank") == [
        ("http://home.test/a/5",), ("http://home.test/a/6",)]


@pytest.mark.parametrize(("alive", "expected"), [(False, {3: 5, 4: 1, 5: 1, 6: 1}), (True, {3: 5, 4: 5})])
def test_origins_that_never_gave_a_page_get_as_many_slots_as_new_origins_earned(
        tmp_path: Path, server: FaultServer, alive: bool, expected: dict[int, int]) -> None:
    """Ten origins found by links, each with one URL: a first batch gives half its slots to them (no history: even
    odds); when they turn out dead (404), the next batches give them one slot, when alive they get what they need."""
    hosts = [f"x{i}.test" for i in range(10)]
    server.route("*", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [f"http://{h}/page" for h in hosts] + ["/p1"])))
    server.route("home.test", "/p*", chain())
    for h in hosts:
        server.route(h, "/page", pages(h) if alive else respond(404))
    s = crawl_settings(tmp_path, server, ["http://home.test/"], origin_probes=10)
    stages.init(s)
    run_cycles(s, 5)
    assert dict(rows(s, "SELECT fetch_cycle, count(*) FROM batches WHERE host LIKE 'x%' GROUP BY 1")) == expected
    assert rows(s, "SELECT untested_slots FROM cycles WHERE cycle BETWEEN 2 AND 4 ORDER BY cycle") == (
        [(5,), (9,), (9,)] if alive else [(5,), (1,), (1,)])


def test_replaying_a_cycle_with_probes_held_origins_and_scope_refusals_leaves_identical_tables(
        tmp_path: Path, server: FaultServer) -> None:
    server.route("*", "/robots.txt", respond(404))
    server.route("home.test", "/", respond(200, html("home", [
        "http://dead.test/a", "/skip/x", *[f"/gone/{i}" for i in range(4)], "/p1"])))
    server.route("home.test", "/p*", chain())
    s = crawl_settings(tmp_path, server, ["http://home.test/"], url_exclude="/skip/",
                       connect_to=f"dead.test=127.0.0.1:{free_port()},*.test=127.0.0.1:{server.port}")
    stages.init(s)
    run_cycles(s, 3)
    assert rows(s, "SELECT cycle, state FROM origin_tries WHERE host = 'dead.test' ORDER BY cycle") == [
        (2, "backoff"), (3, "backoff")]
    assert rows(s, "SELECT count(*) FROM v_paths_held") == [(1,)]
    before = table_digest(s)
    run_cycles(s, 1, first=3)
    assert table_digest(s) == before


def test_every_scope_rule_refuses_urls_at_admission_with_its_reason(tmp_path: Path, server: FaultServer) -> None:
    server.route("*", "/robots.txt", respond(404))
    server.route("docs.in.test", "/", respond(200, html("home", [
        "http://blog.in.test/a", "http://private.in.test/x", "http://docs.in.test/drafts/y", "http://other.test/z",
        "/d1"])))
    server.route("docs.in.test", "/d*", chain("/d"))
    server.route("blog.in.test", "/a", respond(200, html("blog", ["http://blog.in.test/b"])))
    s = crawl_settings(tmp_path, server, ["http://docs.in.test/", "http://outside.test/"],
                       allowed_domains="in.test", denied_domains="private.in.test", url_exclude="/drafts/",
                       max_hops=2)
    migrations = len(list((SQL_DIR / "migrations").glob("[0-9][0-9][0-9]_*.sql")))
    assert stages.init(s) == {"migrations": migrations, "seeds": 1, "rejected": 1}
    run_cycles(s, 4)
    rejects = rows(s, "SELECT cycle, url, reason FROM url_rejects ORDER BY cycle, url")
    assert rejects == [
        (0, "http://outside.test/", "domain_not_allowed"),
        (1, "http://docs.in.test/drafts/y", "url_excluded"), (1, "http://other.test/z", "domain_not_allowed"),
        (1, "http://private.in.test/x", "domain_denied"),
        (3, "http://docs.in.test/d3", "too_many_hops")]
    assert rows(s, "SELECT url, hops FROM frontier ORDER BY url") == [
        ("http://blog.in.test/a", 1), ("http://blog.in.test/b", 2), ("http://docs.in.test/", 0),
        ("http://docs.in.test/d1", 1), ("http://docs.in.test/d2", 2)]


def test_external_hosts_and_include_patterns_and_a_scope_changed_later(tmp_path: Path, server: FaultServer) -> None:
    server.route("*", "/robots.txt", respond(404))
    server.route("a.test", "/", respond(200, html("a", ["http://b.test/x", "/keep/1", "/skip/2", "/later/3"])))
    server.route("a.test", "/*", pages("page"))
    s = crawl_settings(tmp_path, server, ["http://a.test/"], follow_external=False, batch_size=1,
                       url_include=r"^http://a\.test/(keep/|skip/|$)")
    stages.init(s)
    run_cycles(s, 1)
    assert rows(s, "SELECT url, reason FROM url_rejects ORDER BY url") == [
        ("http://a.test/later/3", "url_not_included"), ("http://b.test/x", "external_host")]
    # a narrower scope holds back URLs admitted before, from the next batch it chooses on; they stay in the frontier
    run_cycles(with_overrides(s, {"url_exclude": "/skip/"}), 1, first=2)
    assert rows(s, "SELECT url, status FROM frontier WHERE url LIKE '%/skip/%' OR url LIKE '%/keep/%' "
                   "ORDER BY url") == [("http://a.test/keep/1", "fetched"), ("http://a.test/skip/2", "unfetched")]
    assert rows(s, "SELECT count(*) FROM batches WHERE fetch_cycle = 3") == [(0,)]
    run_cycles(s, 1, first=3)  # the scope as before: the held URL takes a slot again
    assert rows(s, "SELECT url, status FROM frontier WHERE url LIKE '%/skip/%'") == [
        ("http://a.test/skip/2", "fetched")]


def test_a_scope_that_refuses_every_seed_stops_init_with_one_line(tmp_path: Path, server: FaultServer) -> None:
    s = crawl_settings(tmp_path, server, ["http://a.test/", "http://b.test/"], allowed_domains="example.org")
    with pytest.raises(SettingsError) as e:
        stages.init(s)
    assert str(e.value) == (f"setting seeds_file: {tmp_path / 'seeds.txt'} holds no seed URL inside the crawl scope "
                            "(allowed_domains, denied_domains, url_include, url_exclude); first: http://a.test/ "
                            "(domain_not_allowed)")
    assert rows(s, "SELECT count(*) FROM frontier") == [(0,)]


@pytest.mark.parametrize(("key", "value", "why"), [
    ("url_include", "(unclosed", "not a regular expression (missing ): (unclosed)"),
    ("url_exclude", "(?=lookahead)", "not a regular expression (invalid perl operator: (?=)"),
    ("allowed_domains", "ok.test, bad domain", "'bad domain' is not a domain name"),
    ("max_hops", -1, "must not be negative, got -1"),
])
def test_a_bad_scope_setting_is_one_line_naming_it(key: str, value: object, why: str) -> None:
    with pytest.raises(SettingsError) as e:
        load_settings(overrides={key: value}, environ={})
    assert str(e.value) == f"setting {key}: {why} (from flag --{key.replace('_', '-')})"


def test_domains_cover_their_subdomains_and_nothing_else(tmp_path: Path) -> None:
    rules = load_settings(overrides={"allowed_domains": "*.Example.org, .docs.test", "denied_domains": "x.example.org"},
                          environ={}).scope_rules()
    assert rules["allowed_domains"] == ["example.org", "docs.test"]
    con = duckdb.connect()
    migrate(con)
    hosts = ["example.org", "a.example.org", "badexample.org", "x.example.org", "y.x.example.org", "docs.test",
             "example.org.evil.test"]
    got = [con.execute("SELECT scope_reason('http://' || $h || '/', $h, 0, $r)", {"h": h, "r": rules}).fetchall()[0][0]
           for h in hosts]
    assert got == [None, None, "domain_not_allowed", "domain_denied", "domain_denied", None, "domain_not_allowed"]
