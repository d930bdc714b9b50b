"""Stored pages fetched again (refreshes), end to end on a web that changes between cycles (tests/support/changing_web:
one loopback host per way real servers answer conditional requests, real HTML): the conditions sent, what each check
found, the stored copy and the ranker index replaced or left, the WARC revisit records, the cycle figures, and a replay
of the cycle leaving every table as it was.

Three cycles under the refresh policy fixed, every page due every cycle: cycle 1 fetches every page, cycle 2 fetches
them again unchanged, then the web moves to its second version and cycle 3 fetches them again."""

from __future__ import annotations

import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.db import connect
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.pipeline import stages
from crawlcycle.ranking import ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.changing_web import WAYS, ChangingWeb, html, serve
from tests.support.demo import USER_AGENT

DAYS = [date(2026, 11, d) for d in (1, 2, 3)]
NAV = {"etag.test": ("/a", "/b", "/gone", "/moved"), "lastmod.test": ("/a", "/b")}  # the others: /a alone
# cycle 3's check of each page, by what the second version of the web did to it
CHECKS = {
    "http://etag.test/a": "changed", "http://etag.test/b": "not_modified", "http://etag.test/gone": "gone",
    "http://etag.test/moved": "moved",
    "http://lastmod.test/a": "changed", "http://lastmod.test/b": "not_modified",
    "http://ignores.test/a": "unchanged",       # a new build banner only: other bytes, the same main text
    "http://samedate.test/a": "changed",        # its Last-Modified did not move, its text did
    "http://stale.test/a": "not_modified",      # changed, but its server says 304: the crawler cannot tell
    "http://plain.test/a": "changed",
}


def page(host: str, title: str, text: str, build: int) -> bytes:
    return html(title, text, NAV.get(host, ("/a",)), str(build))


def first_version(web: ChangingWeb) -> None:
    for host in WAYS:
        web.put(f"http://{host}/a", page(host, f"The {host} guide", f"Configure the zeppelin module of {host}.", 1))
    for host in ("etag.test", "lastmod.test"):
        web.put(f"http://{host}/b", page(host, f"The {host} reference", "Options of the reference manual.", 1))
    web.put("http://etag.test/gone", page("etag.test", "Retired page", "The gramophone backend, soon retired.", 1))
    web.put("http://etag.test/moved", page("etag.test", "Old place", "The harpsichord tutorial lives here.", 1))


def second_version(web: ChangingWeb) -> None:
    web.version = 2
    for host in WAYS:
        text = f"Configure the zeppelin module of {host}." if host == "ignores.test" else \
            f"Tune the quokka engine of {host}."
        web.put(f"http://{host}/a", page(host, f"The {host} guide", text, 2))
    web.put("http://etag.test/gone", b"gone", status=404)
    web.put("http://etag.test/moved", b"", status=301, location="http://etag.test/tutorial")
    web.put("http://etag.test/tutorial", page("etag.test", "New place", "The harpsichord tutorial, moved.", 2))


@pytest.fixture(scope="module")
def web() -> ChangingWeb:
    w = ChangingWeb()
    first_version(w)
    return w


@pytest.fixture(scope="module")
def port(web: ChangingWeb):
    with serve(web) as p:
        yield p


def settings_for(folder: Path, port: int) -> Settings:
    seeds = folder / "seeds.txt"
    seeds.write_text("".join(f"{u}\n" for u in CHECKS))
    (folder / "queries" / "dt=2026-11-01").mkdir(parents=True)
    (folder / "queries" / "dt=2026-11-01" / "q.tsv").write_text("zeppelin module\t5\nquokka engine\t3\n"
                                                                  "gramophone backend\t2\n")
    return load_settings(environ={}, overrides={
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.01, "max_delay": 1.0, "delay_factor": 0.5, "db_path": str(folder / "crawl.duckdb"),
        "data_dir": str(folder / "data"), "seeds_file": str(seeds), "query_log_dir": str(folder / "queries"),
        "batch_size": 40, "per_host_cap": 20, "shards": 2, "parse_workers": 1, "start_date": "2026-11-01",
        "refresh_policy": "fixed", "fixed_revisit_cycles": 1, "min_revisit_cycles": 1})


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory, web: ChangingWeb, port: int) -> Settings:
    s = settings_for(tmp_path_factory.mktemp("revisits"), port)
    stages.init(s)
    for day in DAYS[:2]:
        stages.run_cycle(s, day, progress=lambda m: None)
    second_version(web)
    stages.run_cycle(s, DAYS[2], progress=lambda m: None)
    return s


def rows(s: Settings, sql: str, *params: object) -> list[tuple]:
    with connect(s, read_only=True) as con:
        return con.execute(sql, list(params) or None).fetchall()


def warc_records(s: Settings, cycle: int) -> list:
    out = []
    for path in sorted(Path(s.data_dir).glob(f"cycles/{cycle:05d}/shard-*/responses.warc.gz")):
        with path.open("rb") as f:
            out += [(r.rec_type, r.rec_headers, r.http_headers) for r in ArchiveIterator(f)]
    return out


def test_every_refresh_is_a_check_and_finds_what_the_web_did(crawl: Settings) -> None:
    checks = dict(rows(crawl, "SELECT url, outcome FROM page_checks WHERE cycle = 2"))
    # unchanged: a 304 where the server answers conditions, the same payload where it does not
    assert checks == {u: "not_modified" if u.split("/")[2] in ("etag.test", "lastmod.test", "stale.test")
                      else "unchanged" for u in CHECKS}
    assert dict(rows(crawl, "SELECT url, outcome FROM page_checks WHERE cycle = 3")) == CHECKS
    assert rows(crawl, "SELECT DISTINCT previous_cycle FROM page_checks WHERE cycle = 3") == [(2,)]
    found = dict(rows(crawl, "SELECT outcome, list(DISTINCT changed) FROM page_checks GROUP BY 1"))
    assert found == {"not_modified": [False], "unchanged": [False], "changed": [True], "gone": [True],
                     "moved": [True]}
    bits = dict(rows(crawl, "SELECT url, simhash_bits FROM page_checks WHERE cycle = 3"))
    assert bits["http://ignores.test/a"] == 0 < bits["http://plain.test/a"] and bits["http://etag.test/b"] is None
    # the cycle figures say as much
    assert rows(crawl, "SELECT refreshes, checks_not_modified, checks_changed, checks_gone FROM cycles "
                       "WHERE cycle = 3") == [(len(CHECKS), 3, 4, 2)]
    assert rows(crawl, "SELECT count(*) FROM dq_results WHERE NOT success") == [(0,)]


def test_conditional_requests_carry_the_stored_validators(crawl: Settings, web: ChangingWeb) -> None:
    etag, lastmod, plain = (web.sent(f"http://{h}/b" if h != "plain.test" else f"http://{h}/a")
                            for h in ("etag.test", "lastmod.test", "plain.test"))
    assert "if-none-match" not in etag[0] and etag[1]["if-none-match"] == etag[2]["if-none-match"]
    assert etag[1]["if-none-match"].startswith('"') and "if-modified-since" not in etag[1]
    assert "if-modified-since" not in lastmod[0] and lastmod[1]["if-modified-since"].endswith("GMT")
    # a server that sends no validators is asked again unconditionally, and its answer still compared
    assert len(plain) == 3 and not any(k.startswith("if-") for h in plain for k in h)
    with_both = web.sent("http://ignores.test/a")[1]
    assert with_both["if-none-match"].startswith('"') and with_both["if-modified-since"].endswith("GMT")


def test_a_changed_page_replaces_its_stored_copy_and_its_postings(crawl: Settings) -> None:
    page = rows(crawl, "SELECT text, cycle, checked_cycle, changed_cycle FROM pages WHERE url = 'http://etag.test/a'")
    assert "quokka" in page[0][0] and "zeppelin" not in page[0][0] and page[0][1:] == (3, 3, 3)
    old = rows(crawl, "SELECT text, cycle, checked_cycle, replaced_cycle FROM replaced_pages "
                      "WHERE url = 'http://etag.test/a' ORDER BY replaced_cycle")
    assert [r[1:] for r in old] == [(1, 1, 2), (1, 2, 3)] and "zeppelin" in old[-1][0]
    # its out-links were replaced too: the old ones kept with the cycle that replaced them
    assert rows(crawl, "SELECT DISTINCT cycle FROM links WHERE src = 'http://etag.test/a'") == [(3,)]
    assert rows(crawl, "SELECT DISTINCT cycle FROM replaced_links WHERE src = 'http://etag.test/a' "
                       "AND replaced_cycle = 3") == [(1,)]
    # unchanged or not modified: checked now, the stored copy of cycle 1 stays
    assert rows(crawl, "SELECT cycle, checked_cycle, changed_cycle FROM pages WHERE url IN "
                       "('http://etag.test/b', 'http://ignores.test/a', 'http://stale.test/a')") == [(1, 3, 1)] * 3
    with connect(crawl, read_only=True) as con:
        now = {q: set(ranker.score_pages(con, crawl, q)) for q in ("zeppelin", "quokka")}
        results = dict(con.execute("SELECT cycle || ' ' || query, list(url ORDER BY rank) FROM query_results "
                                   "GROUP BY ALL").fetchall())
    assert "http://etag.test/a" in now["quokka"] and "http://etag.test/a" not in now["zeppelin"]
    # the results move with the text: the ranker's top K of cycle 3 is read from the new copies
    assert "http://etag.test/a" in results["2 zeppelin module"] and "http://etag.test/a" in results["3 quokka engine"]
    assert "http://etag.test/a" not in results["3 zeppelin module"]
    assert "http://stale.test/a" in results["3 zeppelin module"]  # its server's 304 kept the old text
    assert "http://ignores.test/a" in results["3 zeppelin module"]


def test_gone_and_moved_pages_leave_the_pages_and_the_index(crawl: Settings) -> None:
    for url, state in (("http://etag.test/gone", "gone"), ("http://etag.test/moved", "redirected_permanent")):
        assert rows(crawl, "SELECT count(*) FROM pages WHERE url = ?", url) == [(0,)]
        assert rows(crawl, "SELECT count(*) FROM posting_docs WHERE url = ?", url) == [(0,)]
        assert rows(crawl, "SELECT status FROM frontier WHERE url = ?", url) == [(state,)]
        assert rows(crawl, "SELECT replaced_cycle FROM replaced_pages WHERE url = ? AND cycle = 1 "
                           "ORDER BY replaced_cycle DESC LIMIT 1", url) == [(3,)]
        # its in-links stay: it is still a URL pages link to
        assert rows(crawl, "SELECT count(*) > 0 FROM links WHERE dst = ?", url) == [(True,)]
    with connect(crawl, read_only=True) as con:
        assert "http://etag.test/gone" not in ranker.score_pages(con, crawl, "gramophone")
    # the redirect's target is a URL of its own, fetched (same host) and linked from the old URL
    assert rows(crawl, "SELECT cycle FROM pages WHERE url = 'http://etag.test/tutorial'") == [(3,)]
    assert rows(crawl, "SELECT count(*) FROM links WHERE src = 'http://etag.test/moved' AND "
                       "dst = 'http://etag.test/tutorial'") == [(1,)]
    # the stored pages a refresh policy may take are those still fetched
    assert rows(crawl, "SELECT count(*) FROM batches WHERE fetch_cycle = 4 AND kind = 'refresh' AND url IN "
                       "('http://etag.test/gone', 'http://etag.test/moved')") == [(0,)]


def test_answers_that_repeat_the_stored_copy_are_revisit_records(crawl: Settings) -> None:
    first = {h["WARC-Target-URI"]: h["WARC-Date"] for t, h, _ in warc_records(crawl, 1) if t == "response"}
    revisits = {h["WARC-Target-URI"]: (h, http) for t, h, http in warc_records(crawl, 2) if t == "revisit"}
    assert set(revisits) == set(CHECKS)  # the whole batch of cycle 2 repeated what cycle 1 stored
    for url, (h, http) in revisits.items():
        profile = h["WARC-Profile"].rsplit("/", 1)[1]
        by_server = url.split("/")[2] in ("etag.test", "lastmod.test", "stale.test")
        assert profile == ("server-not-modified" if by_server else "identical-payload-digest")
        assert http.get_statuscode() == ("304" if by_server else "200")
        assert h["WARC-Refers-To-Target-URI"] == url and h["WARC-Refers-To-Date"] == first[url]
        assert (h.get_header("WARC-Payload-Digest") is not None) == (not by_server)
    # in cycle 3 the changed pages are responses again, and the one whose bytes changed but not its text too
    third = {h["WARC-Target-URI"]: t for t, h, _ in warc_records(crawl, 3) if t in ("response", "revisit")}
    assert third["http://ignores.test/a"] == third["http://plain.test/a"] == "response"
    assert third["http://etag.test/b"] == third["http://stale.test/a"] == "revisit"
    warcs = sorted(Path(crawl.data_dir).glob("cycles/*/shard-*/responses.warc.gz"))
    check = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v", *map(str, warcs)],
                           capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count("not checked (revisit)") == len(CHECKS) + 3, check.stdout


def test_replaying_a_cycle_of_refreshes_leaves_every_table_as_it_was(crawl: Settings) -> None:
    """A re-run of cycle 3 (in place, so that the model files keep their paths: the last test of the crawl) first puts
    back what its checks replaced (the rows, the links, the validators its conditional requests sent), so it checks
    the stored copies of cycle 2 again, finds what it found, and leaves every table equal."""
    before = table_digest(crawl)
    stages.run_cycle(crawl, DAYS[2], progress=lambda m: None)
    assert table_digest(crawl) == before
