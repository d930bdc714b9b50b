"""Sitemaps' lastmod dates proving themselves against the checks, end to end on a web that changes between cycles
(tests/support/changing_web: one loopback host per way of dating pages in a sitemap, real HTML and sitemap XML).

Four cycles under the refresh policy fixed, every page checked every cycle, each host's sitemap read after its pages
(robots.txt fetched afresh every cycle). Before cycle 2 page /a of every host changes, before cycle 3 page /b of the
honest and the lying host; during cycle 4, after its pages were checked, the honest host changes /c and its sitemap
says so. Judged by the checks of cycles 2 to 4 (/d of the frozen host gives a date in no W3C form: never judged):

| host | what its lastmod says | judged | agreed | changes it told, found |
|---|---|---|---|---|
| honest | when the page changed | 11 (/c of cycle 4: changed after its check) | 11 | 2 |
| lying | when the site last changed, for every page | 12 | 6 | 2 |
| frozen | the day the site went up | 9 | 8 | 0 |
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from crawlcycle.db import connect
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.changing_web import SITEMAPS, ChangingWeb, html, serve
from tests.support.demo import USER_AGENT

DAYS = [date(2026, 11, d) for d in (1, 2, 3, 4)]
PATHS = ("/a", "/b", "/c", "/d")
URLS = [f"http://{host}{path}" for host in SITEMAPS for path in PATHS]


def page(host: str, path: str, text: str) -> bytes:
    return html(f"{host} {path.strip('/')}", text, PATHS)


@pytest.fixture(scope="module")
def web() -> ChangingWeb:
    w = ChangingWeb()
    for url in URLS:
        w.put(url, page(url.split("/")[2], "/" + url.split("/")[3], "Configure the zeppelin module."))
    return w


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory, web: ChangingWeb) -> Settings:
    folder = tmp_path_factory.mktemp("lastmod")
    (folder / "seeds.txt").write_text("".join(f"{u}\n" for u in URLS))
    (folder / "queries" / "dt=2026-11-01").mkdir(parents=True)
    (folder / "queries" / "dt=2026-11-01" / "q.tsv").write_text("zeppelin module\t5\nquokka engine\t3\n")
    with serve(web) as port:
        s = load_settings(environ={}, overrides={
            "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{port}", "allow_networks": "127.0.0.0/8",
            "min_delay": 0.01, "max_delay": 1.0, "delay_factor": 0.5, "db_path": str(folder / "crawl.duckdb"),
            "data_dir": str(folder / "data"), "seeds_file": str(folder / "seeds.txt"),
            "query_log_dir": str(folder / "queries"), "batch_size": 40, "per_host_cap": 20, "shards": 2,
            "parse_workers": 1, "start_date": "2026-11-01", "robots_ttl": 0, "refresh_policy": "fixed",
            "fixed_revisit_cycles": 1, "min_revisit_cycles": 1, "lastmod_trust_checks": 6,
            "lastmod_trust_share": 0.85})
        stages.init(s)
        changes = {DAYS[1]: [f"http://{h}/a" for h in SITEMAPS], DAYS[2]: ["http://honest.test/b", "http://lying.test/b"]}
        for day in DAYS:
            for url in changes.get(day, []):
                web.put(url, page(url.split("/")[2], "/" + url.split("/")[3], "Tune the quokka engine."))
            if day == DAYS[3]:
                web.publish_with_sitemap("http://honest.test/c", page("honest.test", "/c", "Tune the quokka engine."))
            stages.run_cycle(s, day, progress=lambda m: None)
    return s


def rows(s: Settings, sql: str, *params: object) -> list[tuple]:
    with connect(s, read_only=True) as con:
        return con.execute(sql, list(params) or None).fetchall()


def trust(s: Settings, as_of: int) -> dict[str, tuple]:
    return {host: tuple(rest) for host, *rest in rows(
        s, "SELECT host, judged, agreed, told, trusted FROM sitemap_hosts(?, ?::JSON)", as_of,
        json.dumps(s.section("refresh")))}


def test_the_sitemaps_lastmods_are_kept_and_each_check_records_its_page_s(crawl: Settings, web: ChangingWeb) -> None:
    def wall(url: str) -> datetime:
        host, path = url.removeprefix("http://").split("/", 1)
        return datetime.fromtimestamp(web.changed_wall[(host, "/" + path)], UTC).replace(tzinfo=None)

    # a row when a URL's lastmod first comes or moves: the honest host's /a moved in cycle 2, /b in 3, /c in 4
    kept = rows(crawl, "SELECT url, list(cycle ORDER BY cycle) FROM sitemap_lastmods WHERE host = 'honest.test' "
                       "GROUP BY url ORDER BY url")
    assert kept == [("http://honest.test/a", [1, 2]), ("http://honest.test/b", [1, 3]),
                    ("http://honest.test/c", [1, 4]), ("http://honest.test/d", [1])]
    assert rows(crawl, "SELECT lastmod FROM sitemap_lastmods WHERE url = 'http://honest.test/c' AND cycle = 4") == [
        (wall("http://honest.test/c"),)]
    # the frozen host's date never moves, and the value in no W3C form is counted, not kept
    assert rows(crawl, "SELECT DISTINCT cycle, lastmod FROM sitemap_lastmods WHERE host = 'frozen.test'") == [
        (1, datetime(2023, 11, 15))]
    assert rows(crawl, "SELECT list(bad_lastmods ORDER BY cycle) FROM sitemap_fetches WHERE host = 'frozen.test'") == [
        ([1, 1, 1, 1],)]
    # a check records the lastmod the sitemap read of its cycle gave (after the host's pages)
    assert rows(crawl, "SELECT sitemap_lastmod FROM page_checks WHERE cycle = 2 AND url = 'http://honest.test/a'") == [
        (wall("http://honest.test/a"),)]
    assert rows(crawl, "SELECT count(*) FROM page_checks WHERE host <> 'frozen.test' AND sitemap_lastmod IS NULL") == [
        (0,)]
    assert rows(crawl, "SELECT DISTINCT url FROM page_checks WHERE sitemap_lastmod IS NULL") == [
        ("http://frozen.test/d",)]


def test_an_honest_sitemap_is_trusted_once_enough_checks_agreed_and_a_lying_one_never(crawl: Settings) -> None:
    assert trust(crawl, 2) == {"honest.test": (4, 4, 1, False), "lying.test": (4, 1, 1, False),
                               "frozen.test": (3, 2, 0, False)}
    assert trust(crawl, 3)["honest.test"] == (8, 8, 2, True)
    # the frozen host agrees often enough (8 of 9), but has never told a change the checks found
    assert trust(crawl, 4) == {"honest.test": (11, 11, 2, True), "lying.test": (12, 6, 2, False),
                               "frozen.test": (9, 8, 0, False)}
    assert rows(crawl, "SELECT host, trusted FROM v_sitemap_trust") == [
        ("frozen.test", False), ("honest.test", True), ("lying.test", False)]


def test_a_trusted_sitemap_decides_p_changed(crawl: Settings) -> None:
    decided = {(c, u): (json.loads(parts)["by_sitemap"], json.loads(parts)["p_changed"]) for c, u, parts in rows(
        crawl, "SELECT score_cycle, url, parts FROM refresh_scores")}
    assert {c for c, _ in decided} == {1, 2, 3, 4}
    # not before its host's checks proved it: the score stage of cycle 2 saw 4 agreeing checks, of cycle 3 eight
    assert not any(by for (c, url), (by, _) in decided.items() if c < 3 or "honest" not in url)
    assert all(decided[3, f"http://honest.test{p}"] == (True, pytest.approx(1 - 9 / 10)) for p in PATHS)
    # after cycle 4 its sitemap tells that /c changed after its check: P(changed) is the host's agreement, 12 of 13
    assert decided[4, "http://honest.test/c"] == (True, pytest.approx(12 / 13))
    assert all(decided[4, f"http://honest.test{p}"] == (True, pytest.approx(1 / 13)) for p in ("/a", "/b", "/d"))
    fresh = {url: (by, p) for url, by, p in rows(crawl, "SELECT url, by_sitemap, p_changed FROM v_page_freshness")}
    assert fresh["http://honest.test/c"] == (True, pytest.approx(12 / 13))
    assert not any(by for url, (by, _) in fresh.items() if "honest" not in url)
    assert rows(crawl, "SELECT url FROM v_page_freshness LIMIT 1") == [("http://honest.test/c",)]
