"""Index epochs over cycles of the real documentation web (../shared/corpus/dev-docs.warc.gz): within an epoch a
cycle's results, carried and merged with the pages it indexed, equal a full rank under the epoch's statistics;
``recompute = full`` opens an epoch every cycle on today's statistics; drift and age close an epoch."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from crawlcycle.db import connect
from crawlcycle.devtools.warc_server import serve
from crawlcycle.pipeline import stages
from crawlcycle.ranking import ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT

CYCLES = 4


@pytest.fixture(scope="module")
def docs_port(dev_docs: Path) -> int:
    with serve([dev_docs]) as handle:
        yield handle.port


def crawl(folder: Path, port: int, shared: Path, **overrides: object) -> Settings:
    seeds = folder / "seeds.txt"
    seeds.write_text("http://django.docs.test/contents.html\nhttp://sphinx.docs.test/contents.html\n"
                     "http://python.docs.test/contents.html\n")
    queries = (shared / "queries" / "csn_queries.csv").read_text().splitlines()[1:]
    for day in range(1, CYCLES + 1):
        (folder / "queries" / f"dt=2026-11-0{day}").mkdir(parents=True)
        (folder / "queries" / f"dt=2026-11-0{day}" / "queries.tsv").write_text("".join(f"{q}\t1\n" for q in queries))
    # bm25_depth above the crawl's pages: a full rank then scores every page holding a term, as the merge does
    settings = load_settings(environ={}, overrides={
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.01, "max_delay": 0.5, "db_path": str(folder / "crawl.duckdb"),
        "data_dir": str(folder / "data"), "seeds_file": str(seeds), "query_log_dir": str(folder / "queries"),
        "batch_size": 60, "per_host_cap": 20, "shards": 1, "parse_workers": 1, "policy": "indegree",
        "bm25_depth": 100_000, "epoch_drift": 1.0, **overrides})
    stages.init(settings)
    for day in range(1, CYCLES + 1):
        # the last cycle fetches a few pages: most results are those of the pages it leaves as they were
        batch = replace(settings, batch_size=6) if day == CYCLES - 1 else settings
        stages.run_cycle(batch, date(2026, 11, day), progress=lambda m: None)
    return settings


def epoch_runs(settings: Settings) -> list[dict]:
    with connect(settings, read_only=True) as con:
        rows = con.execute("SELECT metrics FROM model_runs WHERE model = 'index_epoch' ORDER BY cycle").fetchall()
    return [json.loads(r[0]) for r in rows]


def results(settings: Settings, cycle: int) -> list[tuple]:
    with connect(settings, read_only=True) as con:
        return con.execute("SELECT query, rank, url, score FROM query_results WHERE cycle = ? ORDER BY ALL",
                           [cycle]).fetchall()


@pytest.fixture(scope="module")
def carried(tmp_path_factory: pytest.TempPathFactory, docs_port: int, shared: Path) -> Settings:
    return crawl(tmp_path_factory.mktemp("changed"), docs_port, shared)


def test_a_cycle_within_an_epoch_equals_a_full_rank_under_its_statistics(carried: Settings, tmp_path: Path) -> None:
    runs = epoch_runs(carried)
    assert [r["opened"] for r in runs] == ["first"] + [None] * (CYCLES - 1)
    assert {r["epoch"] for r in runs} == {1}
    # the last cycle ranks again only queries whose results it wrote, and the bound spares some the merge
    last = runs[-1]
    assert last["queries_carried"] > 0 and last["queries_merged"] > 0 and last["queries_ranked"] > 0, last
    # Rank the last cycle's queries over the whole index on a copy, under the same epoch: the same results.
    copy = replace(carried, db_path=str(tmp_path / "copy.duckdb"))
    shutil.copy(carried.db_path, copy.db_path)
    with connect(copy) as con:
        con.execute("DELETE FROM query_results WHERE cycle < ?", [CYCLES])  # nothing to carry
        again = ranker.rank_queries(con, copy, CYCLES)
    assert again.ranked == runs[-1]["queries_ranked"] + runs[-1]["queries_merged"] + runs[-1]["queries_carried"]
    assert again.opened is None and again.merged == 0
    assert results(copy, CYCLES) == results(carried, CYCLES)


def test_refits_again_leave_the_same_epoch_and_results(carried: Settings, tmp_path: Path) -> None:
    copy = replace(carried, db_path=str(tmp_path / "copy.duckdb"))
    shutil.copy(carried.db_path, copy.db_path)
    stages.refit_models(copy, CYCLES)
    with connect(copy, read_only=True) as a, connect(carried, read_only=True) as b:
        for table in ("index_epochs", "posting_terms", "posting_fields", "posting_docs", "query_results"):
            sql = f"SELECT * FROM {table} ORDER BY ALL"
            assert a.execute(sql).fetchall() == b.execute(sql).fetchall(), table


@pytest.mark.parametrize(("overrides", "reason"), [({"epoch_drift": 0.0}, "drift"), ({"epoch_cycles": 1}, "age"),
                                                   ({"bm25_k1": 1.5}, "settings")])
def test_an_epoch_closes_on_drift_age_and_other_settings(carried: Settings, tmp_path: Path, overrides: dict,
                                                         reason: str) -> None:
    copy = replace(carried, db_path=str(tmp_path / "copy.duckdb"), **overrides)
    shutil.copy(carried.db_path, copy.db_path)
    stages.refit_models(copy, CYCLES)
    run = epoch_runs(copy)[-1]
    assert (run["opened"], run["epoch"], run["queries_carried"], run["queries_merged"]) == (reason, 2, 0, 0)
    with connect(copy, read_only=True) as con:
        epochs = con.execute("SELECT epoch, opened_cycle, reason, closed_cycle, drift FROM index_epochs "
                             "ORDER BY epoch").fetchall()
        assert con.execute("SELECT count(*) FROM posting_terms WHERE stale").fetchall() == [(0,)]
    assert [e[:4] for e in epochs] == [(1, 1, "first", CYCLES), (2, CYCLES, reason, None)]
    if reason == "drift":  # the closed epoch records the drift that closed it, above the bound
        assert epochs[0][4] == run["drift"] > 0


def test_recompute_full_opens_an_epoch_on_todays_statistics_every_cycle(carried: Settings, tmp_path: Path,
                                                                       docs_port: int, shared: Path) -> None:
    full = crawl(tmp_path, docs_port, shared, recompute="full")
    runs = epoch_runs(full)
    assert [(r["opened"], r["epoch"]) for r in runs] == [("first", 1)] + [("full", c) for c in range(2, CYCLES + 1)]
    assert all(r["drift"] is None and r["queries_ranked"] == 99 for r in runs)
    with connect(full, read_only=True) as con:
        # the statistics are the index's now: a term's count is that of the pages holding it
        assert con.execute("SELECT count(*) FROM posting_terms t WHERE stale OR df <> (SELECT count(DISTINCT doc) "
                           "FROM postings p WHERE p.term = t.term)").fetchall() == [(0,)]
    # Both ways crawl the same first cycle; later they part only as far as the statistics do.
    assert results(full, 1) == results(carried, 1)
