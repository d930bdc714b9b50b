"""Whole cycles in one process against the demo web on loopback, checked in the real DuckDB file."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.db import SQL_DIR, connect, migrate, run_sql
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.fetch.robots import RobotsRules, origin_of
from crawlcycle.ordering import registry
from crawlcycle.pipeline import stages
from crawlcycle.settings import POLICIES, Settings
from crawlcycle.settings.sources import load_settings, write_toml
from tests.support.cli import run_cli

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
# Rows of a cycle a replay's rollback leaves for the stage that writes them to replace: the cycle's own row (begin),
# its gate results (each gate its own) and the ranker index (the refit syncs it with the pages).
# the index is brought up to date by the next run, not rolled back: its pages and counts say which run wrote them
KEPT_BY_ROLLBACK = {("cycles", "cycle"), ("dq_results", "cycle"), ("posting_docs", "cycle"),
                    ("posting_terms", "cycle")}


def _q(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def test_two_cycles_fill_the_tables_politely(settings: Settings) -> None:
    settings = replace(settings, refresh_share_min=0.05)  # cycle 2 fetches stored pages again, whatever they are worth
    stages.init(settings)
    said: list[str] = []
    first = stages.run_cycle(settings, DAY1, progress=said.append)
    second = stages.run_cycle(settings, DAY2, progress=lambda m: None)
    assert (first["cycle"], second["cycle"]) == (1, 2)
    shards = [m for m in said if m.startswith("cycle 1: fetch shard ")]
    assert shards and shards[-1].endswith(f"{len(shards)}/{len(shards)} done") and said[-1].startswith("cycle 1: ")
    assert 0 < first["fetched"] <= first["pages_total"] < second["pages_total"]
    with connect(settings, read_only=True) as con:
        assert _q(con, "SELECT count(*) FROM links")[0][0] > 50
        # Nothing fetched twice but as a refresh, and the frontier never holds a crawled page.
        assert _q(con, "SELECT count(*) FROM fetch_log l JOIN batches b ON b.fetch_cycle = l.cycle AND b.url = l.url "
                       "WHERE b.kind = 'new' AND EXISTS (SELECT 1 FROM fetch_log e WHERE e.url = l.url "
                       "AND e.cycle < l.cycle)")[0][0] == 0
        assert _q(con, "SELECT count(*) FROM v_frontier_open JOIN pages USING (url)")[0][0] == 0
        # The next batch respects the size and per-host cap, and its new URLs avoid crawled ones.
        per_host = _q(con, "SELECT max(n), sum(n) FROM (SELECT count(*) n FROM batches WHERE fetch_cycle = 3 "
                           "GROUP BY host)")
        assert 0 < per_host[0][1] <= settings.batch_size and per_host[0][0] <= settings.per_host_cap
        assert _q(con, "SELECT count(*) FROM batches b JOIN pages p USING (url) WHERE b.fetch_cycle = 3 "
                       "AND b.kind = 'new'")[0][0] == 0
        # robots.txt: no batch ever held a URL its origin's robots.txt disallows.
        origins = {o: RobotsRules.from_stored(s, t, settings.robots_token)
                   for o, s, t in _q(con, "SELECT origin, status, robots_txt FROM robots")}
        batch = _q(con, "SELECT url FROM batches WHERE fetch_cycle > 1")
        assert batch and all(origins[origin_of(u)].allowed(u) for u, in batch if origin_of(u) in origins)
        # robots.txt was fetched (or found missing) for every origin fetched from, once.
        fetched_origins = {origin_of(u) for u, in _q(con, "SELECT url FROM fetch_log WHERE started_at IS NOT NULL")}
        assert fetched_origins <= set(origins) and len(origins) == _q(con, "SELECT count(*) FROM robots "
                                                                          "WHERE fetched_at IS NOT NULL")[0][0]
        assert _q(con, "SELECT count(*), count(DISTINCT url) FROM fetch_requests WHERE url LIKE '%/robots.txt'")[0] \
            == _q(con, "SELECT count(*), count(*) FROM robots")[0]
        # Every gate ran and passed; the views answer.
        assert _q(con, "SELECT count(DISTINCT gate), bool_and(success) FROM dq_results") == [(4, True)]
        assert [r[0] for r in _q(con, "SELECT cycle FROM v_cycle_summary")] == [1, 2]
        assert _q(con, "SELECT count(*) FROM v_next_batch")[0][0] == per_host[0][1]
        assert _q(con, "SELECT count(*) FROM needy_queries WHERE cycle = 2")[0][0] >= 1
        assert _q(con, "SELECT count(*) FROM model_runs WHERE model = 'pagerank'")[0][0] == 2
        # The default policy's models: S' beats guessing the mean on held-out queries; prestige has a fit.
        s_prime = json.loads(_q(con, "SELECT metrics FROM model_runs WHERE model = 's_prime' AND cycle = 2")[0][0])
        assert s_prime["validation_pairs"] > 0 and s_prime["validation_mae"] < s_prime["baseline_mae"]
        assert Path(_q(con, "SELECT file FROM model_runs WHERE model = 's_prime' AND cycle = 2")[0][0]).is_file()
        assert "coefficients" in json.loads(_q(con, "SELECT metrics FROM model_runs WHERE model = 'prestige' "
                                                    "AND cycle = 2")[0][0])
        # New URLs by the ordering policy, stored pages fetched again by the refresh policy.
        assert _q(con, "SELECT kind, policy FROM batches WHERE fetch_cycle > 1 GROUP BY ALL ORDER BY ALL") == [
            ("new", "hybrid"), ("refresh", "impact")]
    # Every WARC the cycles wrote passes warcio's own check (record digests; a revisit record's are not checked), and
    # opens with a warcinfo record. The demo web's server ignores conditional requests: the refreshes of cycle 2 got
    # their stored pages again, written as revisit records.
    warcs = sorted(Path(settings.data_dir).glob("cycles/*/shard-*/responses.warc.gz"))
    assert len(warcs) >= 2
    check = subprocess.run([str(Path(sys.executable).with_name("warcio")), "check", "-v", *map(str, warcs)],
                           capture_output=True, text=True)
    records = []
    for path in warcs:
        with path.open("rb") as f:
            types = [r.rec_type for r in ArchiveIterator(f)]
        assert types[0] == "warcinfo" and types.count("warcinfo") == 1
        records += types
    assert check.returncode == 0 and check.stdout.count("digest pass") == len(records) - records.count("revisit") > 20 \
        and check.stdout.count("not checked (revisit)") == records.count("revisit") > 0, check.stdout[-2000:]


def test_a_cycle_lets_other_processes_into_the_database_while_it_fetches_and_parses(settings: Settings,
                                                                                   tmp_path: Path) -> None:
    """run_cycle holds the database open across its other tasks (they share one DuckDB instance) but not across
    fetch and parse, which can take long on the live web: a query from another process gets in then."""
    stages.init(settings)
    write_toml(settings, tmp_path / "s.toml")
    answered = {}

    def progress(message: str) -> None:
        if " shard 1/" in message:
            task = message.split()[2]
            answered[task] = run_cli("sql", "SELECT count(*) FROM batches", config=tmp_path / "s.toml").returncode
    stages.run_cycle(settings, DAY1, progress=progress)
    assert answered == {"fetch": 0, "parse": 0}


def test_a_sitemap_brings_the_pages_it_lists_into_the_frontier(settings: Settings, demo_web: DemoWeb,
                                                              tmp_path: Path) -> None:
    """The demo web's tail host names a sitemap in its robots.txt: a crawl seeded with its home page alone learns
    every page of the host from it, most of which no fetched page links to yet."""
    with demo_web.warc.open("rb") as f:
        robots = [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read().decode())
                  for r in ArchiveIterator(f) if r.rec_headers.get_header("WARC-Target-URI").endswith("/robots.txt")]
    (robots_url, text), = ((u, t) for u, t in robots if "Sitemap:" in t)
    host = urlsplit(robots_url).hostname
    (tmp_path / "seeds.txt").write_text(f"http://{host}/\n")
    s = replace(settings, seeds_file=str(tmp_path / "seeds.txt"))
    stages.init(s)
    stages.run_cycle(s, DAY1, progress=lambda m: None)
    with connect(s, read_only=True) as con:
        (url, kind, entries, admitted, reason), = con.execute(
            "SELECT url, kind, entries, admitted, reason FROM v_sitemaps WHERE host = ?", [host]).fetchall()
        assert (url, kind, reason) == (text.split("Sitemap: ")[1].strip(), "urlset", None) and entries == admitted >= 5
        # every page it lists is known now; those the home page does not link to came from it alone
        assert con.execute("SELECT count(*) FROM frontier WHERE host = ?", [host]).fetchall()[0][0] >= admitted
        only_listed = _q(con, "SELECT count(*), count(DISTINCT host) FROM frontier f WHERE source = 'sitemap' AND "
                              "NOT EXISTS (SELECT 1 FROM links l WHERE l.dst = f.url)")[0]
        assert only_listed[0] >= 1 and only_listed == _q(con, "SELECT count(*), 1 FROM frontier WHERE source = "
                                                              "'sitemap'")[0]
        assert _q(con, "SELECT bool_and(success) FROM dq_results") == [(True,)]


def test_replaying_an_interval_leaves_identical_tables(settings: Settings) -> None:
    """The replay's rollback takes out what the earlier run of the cycle wrote: in every table of the catalog, the rows
    whose ``cycle`` (or ``score_cycle``: the scores and the batch and probes they chose) names it, and none whose
    ``fetch_cycle`` does (the batch it fetched, chosen by the cycle before). The re-run writes every table again,
    equal."""
    stages.init(settings)
    stages.run_cycle(settings, DAY1, progress=lambda m: None)
    stages.run_cycle(settings, DAY2, progress=lambda m: None)
    before = table_digest(settings)
    with connect(settings) as con:
        named = _q(con, "SELECT c.table_name, c.column_name FROM duckdb_columns() c JOIN duckdb_tables() t "
                        "ON t.table_oid = c.table_oid WHERE c.column_name IN ('cycle', 'score_cycle', 'fetch_cycle') "
                        "ORDER BY ALL")
        assert {("frontier_scores", "score_cycle"), ("batches", "score_cycle"), ("batches", "fetch_cycle"),
                ("probes", "score_cycle"), ("probes", "fetch_cycle")} <= set(named)
        written = {(t, c): _q(con, f"SELECT count(*) FROM {t} WHERE {c} = 2")[0][0] for t, c in named}
        assert written["frontier_scores", "score_cycle"] and written["batches", "score_cycle"]
        assert written["batches", "fetch_cycle"]
        con.begin()
        run_sql(con, "pipeline/update/rollback_cycle", cycle=2)
        registry.clear_cycle(con, 2)
        left = {(t, c): _q(con, f"SELECT count(*) FROM {t} WHERE {c} = 2")[0][0] for t, c in named}
        con.rollback()
    assert {k: n for k, n in left.items() if n and k not in KEPT_BY_ROLLBACK} == {
        k: n for k, n in written.items() if k[1] == "fetch_cycle" and n}
    again = stages.run_cycle(settings, DAY2, progress=lambda m: None)
    assert again["cycle"] == 2
    assert table_digest(settings) == before


def test_a_database_from_before_the_two_cycle_names_keeps_its_rows(tmp_path: Path) -> None:
    """A database of the migrations before 020, whose frontier_scores, batches and probes say `cycle`: the migration
    renames the columns and carries every row over, a batch row and a probe with the cycle whose scores chose it."""
    s = load_settings(environ={}, overrides={"db_path": str(tmp_path / "crawl.duckdb"), "data_dir": str(tmp_path)})
    with connect(s) as con:
        run_sql(con, "migrations/schema_migrations")
        for path in sorted((SQL_DIR / "migrations").glob("[0-9][0-9][0-9]_*.sql")):
            if int(path.name[:3]) < 20:
                run_sql(con, f"migrations/{path.stem}")
                con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [int(path.name[:3]),
                                                                                           path.stem])
        con.execute("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source) VALUES "
                    "('http://a.test/1', 'a.test', 1, 1, 'seed'), ('http://a.test/2', 'a.test', 1, 2, 'link')")
        con.execute("""INSERT INTO frontier_scores VALUES (1, 'http://a.test/1', 0.5, '{"p": 1}'),
                       (2, 'http://a.test/2', 0.25, NULL)""")
        con.execute("""INSERT INTO batches VALUES (2, 'http://a.test/1', 'a.test', 1, 'bfs', 0.5, '{"p": 1}'),
                       (3, 'http://a.test/2', 'a.test', 1, 'bfs', 0.25, NULL)""")
        con.execute("INSERT INTO probes VALUES (3, 'http://b.test', 'b.test', 'new', 'http://b.test/x', 0.125)")
        assert migrate(con)[0] == "020_fetch_and_score_cycles"
        assert _q(con, "SELECT * FROM frontier_scores ORDER BY ALL") == [
            (1, "http://a.test/1", 0.5, '{"p": 1}'), (2, "http://a.test/2", 0.25, None)]
        assert _q(con, "SELECT fetch_cycle, score_cycle, url, host, rank, policy, priority, parts FROM batches "
                       "ORDER BY ALL") == [(2, 1, "http://a.test/1", "a.test", 1, "bfs", 0.5, '{"p": 1}'),
                                           (3, 2, "http://a.test/2", "a.test", 1, "bfs", 0.25, None)]
        assert _q(con, "SELECT fetch_cycle, score_cycle, origin, host, reason, best_url, best_priority "
                       "FROM probes") == [(3, 2, "http://b.test", "b.test", "new", "http://b.test/x", 0.125)]
        assert _q(con, "SELECT fetch_cycle, score_cycle, url FROM v_next_batch") == [(3, 2, "http://a.test/2")]
        with pytest.raises(duckdb.ConstraintException):  # the keys hold as before
            con.execute("INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority) "
                        "VALUES (3, 2, 'http://a.test/2', 'a.test', 2, 'bfs', 0.1)")


@pytest.mark.parametrize("policy", POLICIES)
def test_policies_order_the_batch_their_own_way(settings: Settings, policy: str) -> None:
    s = replace(settings, policy=policy)
    stages.init(s)
    stages.run_cycle(s, DAY1, progress=lambda m: None)
    with connect(s, read_only=True) as con:
        rows = _q(con, "SELECT b.rank, b.priority, f.discovery_seq, f.in_links, f.pagerank FROM batches b "
                       "JOIN frontier f USING (url) WHERE b.fetch_cycle = 2 AND b.kind = 'new' ORDER BY b.rank")
        refreshes = _q(con, "SELECT priority FROM batches WHERE fetch_cycle = 2 AND kind = 'refresh' ORDER BY rank")
    assert rows and [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    assert refreshes == sorted(refreshes, reverse=True)  # the refreshes by their value, whatever orders the new URLs
    key = {"bfs": lambda r: -r[2], "indegree": lambda r: r[3], "pagerank": lambda r: r[4]}.get(policy)
    if key:  # the batch is ordered by the policy's own signal (per-host cap aside)
        assert [key(r) for r in rows] == sorted((key(r) for r in rows), reverse=True)


def test_a_cycle_without_its_query_log_partition_says_so(settings: Settings) -> None:
    stages.init(settings)
    said: list[str] = []
    stages.run_cycle(settings, date(2026, 12, 25), progress=said.append)
    latest = max(p.name for p in Path(settings.query_log_dir).iterdir())  # the demo log's last day
    assert latest.endswith("2026-11-03")
    rows = sum(1 for f in (Path(settings.query_log_dir) / latest).iterdir() for _ in f.open())
    assert [m for m in said if "query-log" in m] == [
        f"cycle 1: no query-log partition for 2026-12-25; read 2026-11-03, {rows} rows "
        "(setting missing_query_log = latest)"]


def test_a_cycle_waits_for_the_one_before(settings: Settings) -> None:
    stages.init(settings)
    assert stages.begin(settings, DAY1) == 1
    with pytest.raises(stages.CycleOrderError, match=r"cycle 1 \(interval 2026-11-01\) has not finished"):
        stages.begin(settings, DAY2)
    assert stages.begin(settings, DAY1) == 1  # the unfinished interval itself may run again
