"""The quality gates bite: every check fails when real cycle output is corrupted in exactly its way, and a
clean cycle passes them all. Two cycles are crawled once from the demo web; each test corrupts a copy."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.db import connect
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.quality.gate_suites import STAGES, check_names, suites
from crawlcycle.quality.gates import GateFailed
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from tests.support.demo import demo_settings

CYCLE = 2  # the cycle whose output is corrupted; it chose batch 3


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Settings:
    s = demo_settings(tmp_path_factory.mktemp("golden"), demo_web, demo_server)
    stages.init(s)
    for day in (1, 2):
        stages.run_cycle(s, date(2026, 11, day), progress=lambda m: None)
    return s


@pytest.fixture
def state(golden: Settings, tmp_path: Path) -> Settings:
    """A copy of the golden crawl, with distribution checks judging any sample size."""
    shutil.copy(golden.db_path, tmp_path / "crawl.duckdb")
    shutil.copytree(Path(golden.data_dir) / "cycles", tmp_path / "data" / "cycles")
    return replace(golden, db_path=str(tmp_path / "crawl.duckdb"), data_dir=str(tmp_path / "data"), gate_min_sample=1)


def shards(s: Settings) -> list[str]:
    return shard_storage.stored_shards(s, CYCLE)


def edit(s: Settings, name: str, change: Callable[[pl.DataFrame], pl.DataFrame], every: bool = False) -> None:
    """Rewrite the first shard file ``name`` holding rows, or every one."""
    paths = [p for p in (Path(d) / name for d in shards(s)) if pl.read_parquet(p).height]
    for path in paths if every else paths[:1]:
        change(pl.read_parquet(path)).write_parquet(path)


def first_row(column: str, value: object) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def change(df: pl.DataFrame) -> pl.DataFrame:
        first = pl.int_range(pl.len()) == 0
        return df.with_columns(pl.when(first).then(pl.lit(value, dtype=df.schema[column])).otherwise(pl.col(column))
                               .alias(column))
    return change


def sql(statement: str, *params: object) -> Callable[[Settings], None]:
    def run(s: Settings) -> None:
        with connect(s) as con:
            con.execute(statement, list(params) or None)
    return run


def squeeze(s: Settings) -> None:
    """Move one host's second request to start before the first ended (closer than any delay)."""
    path = next(p for p in (Path(d) / "requests.parquet" for d in shards(s))
                if pl.read_parquet(p)["host"].is_duplicated().any())
    reqs = pl.read_parquet(path).sort("host", "started_at").with_row_index("i")
    host = reqs.filter(pl.col("host").is_duplicated())["host"][0]
    first, second = reqs.filter(pl.col("host") == host).head(2).iter_rows(named=True)
    reqs.with_columns(started_at=pl.when(pl.col("i") == second["i"]).then(first["finished_at"] - 0.05)
                      .otherwise(pl.col("started_at"))).drop("i").write_parquet(path)


def batch_row(s: Settings, url: str) -> None:
    with connect(s) as con:
        con.execute("INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority) "
                    "VALUES (?, ?, ?, split_part(?, '/', 3), 999, 'hybrid', 0)", [CYCLE + 1, CYCLE, url, url])


CRAWLED = f"(SELECT url FROM pages WHERE cycle = {CYCLE} LIMIT 1)"
CORRUPTIONS: dict[str, tuple[str, Callable[[Settings], object]]] = {
    "fetch_log_url_not_null": ("fetch", lambda s: edit(s, "fetch_log.parquet", first_row("url", None))),
    "fetch_log_key_unique": ("fetch", lambda s: edit(s, "fetch_log.parquet", lambda df: pl.concat([df, df.head(1)]))),
    "status_known": ("fetch", lambda s: edit(s, "fetch_log.parquet", first_row("status", 999))),
    "outcome_known": ("fetch", lambda s: edit(s, "fetch_log.parquet", first_row("outcome", "lost"))),
    "failure_explained": ("fetch", lambda s: edit(s, "fetch_log.parquet", lambda df: first_row("error_class", None)(
        first_row("status", None)(df)))),
    "content_type_known": ("fetch", lambda s: edit(s, "fetch_log.parquet",
                                                   first_row("content_type", "Text/HTML; charset=utf-8"))),
    "error_share": ("fetch", lambda s: edit(s, "fetch_log.parquet", lambda df: df.with_columns(status=pl.lit(
        503, dtype=df.schema["status"])), every=True)),
    "every_batch_url_logged": ("fetch", lambda s: edit(s, "fetch_log.parquet", lambda df: df.slice(1))),
    "fetch_log_within_batch": ("fetch", lambda s: edit(s, "fetch_log.parquet", lambda df: pl.concat([
        df, first_row("url", "http://elsewhere.demo.test/not-in-batch")(df.head(1))]))),
    "host_gap_respected": ("fetch", squeeze),
    "pages_url_not_null": ("parse", lambda s: edit(s, "pages.parquet", first_row("url", None))),
    "pages_key_unique": ("parse", lambda s: edit(s, "pages.parquet", lambda df: pl.concat([df, df.head(1)]))),
    "empty_text_share": ("parse", lambda s: edit(s, "pages.parquet", lambda df: df.with_columns(text=pl.lit("")),
                                                 every=True)),
    "links_per_page": ("parse", lambda s: edit(s, "pages.parquet", lambda df: df.with_columns(
        n_links=pl.lit(0, dtype=df.schema["n_links"])), every=True)),
    "links_src_not_null": ("parse", lambda s: edit(s, "links.parquet", first_row("src", None))),
    "links_dst_not_null": ("parse", lambda s: edit(s, "links.parquet", first_row("dst", None))),
    "links_anchor_not_null": ("parse", lambda s: edit(s, "links.parquet", first_row("anchor", None))),
    "links_canonical": ("parse", lambda s: edit(s, "links.parquet", first_row("dst", "HTTP://Upper.demo.test/a/../b"))),
    "fetch_log_complete": ("update", sql(f"DELETE FROM fetch_log WHERE cycle = {CYCLE} AND url = "
                                         f"(SELECT min(url) FROM fetch_log WHERE cycle = {CYCLE})")),
    "frontier_crawled_disjoint": ("update", sql(f"UPDATE frontier SET status = 'unfetched' WHERE url = {CRAWLED}")),
    "links_source_known": ("update", sql(f"INSERT INTO links (src, dst, anchor, cycle) SELECT 'http://nowhere.demo."
                                         f"test/', url, 'x', {CYCLE} FROM {CRAWLED}")),
    "links_destination_known": ("update", sql(f"INSERT INTO links (src, dst, anchor, cycle) SELECT url, 'http://no"
                                              f"where.demo.test/', 'x', {CYCLE} FROM {CRAWLED}")),
    "frontier_urls_canonical": ("update", sql("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, "
                                              f"source) VALUES ('http://a.demo.test/x#frag', 'a.demo.test', {CYCLE},"
                                              " -1, 'link')")),
    "batch_size_respected": ("materialize", lambda s: replace(s, batch_size=1)),
    "batch_not_crawled": ("materialize", lambda s: batch_row(s, _crawled(s)[0])),
    # the origin of a batch URL now disallows everything (as if its robots.txt changed before the batch was chosen)
    "batch_robots_allowed": ("materialize", sql("UPDATE robots SET status = 200, robots_txt = 'User-agent: *"
                                                "\nDisallow: /' WHERE host = (SELECT min(host) FROM batches WHERE "
                                                f"score_cycle = {CYCLE})")),
    # the origin of a batch URL failed its latest try (as if it had been tried after the batch was chosen)
    "batch_origins_answered": ("materialize", sql(
        "INSERT OR REPLACE INTO origin_tries (cycle, origin, host, probe, error_class, failures, state, "
        f"next_try_cycle) SELECT {CYCLE}, url_origin(min(url)), min(host), true, 'dns', 1, 'backoff', {CYCLE + 2} "
        f"FROM batches WHERE score_cycle = {CYCLE}")),
    "batch_open": ("materialize", sql(f"UPDATE frontier SET status = 'gone' WHERE url = (SELECT min(url) FROM "
                                      f"batches WHERE score_cycle = {CYCLE})")),
    "per_host_cap_respected": ("materialize", lambda s: replace(s, per_host_cap=1)),
}


def _crawled(s: Settings) -> list[str]:
    """Crawled pages the next batch does not refresh."""
    with connect(s, read_only=True) as con:
        return [r[0] for r in con.execute("SELECT url FROM pages WHERE url NOT IN (SELECT url FROM batches WHERE "
                                          "score_cycle = ?) ORDER BY url", [CYCLE]).fetchall()]


def test_every_check_has_a_corruption_that_it_catches() -> None:
    assert sorted(CORRUPTIONS) == sorted(check_names())


def test_a_clean_crawl_passes_every_gate_without_a_report(golden: Settings) -> None:
    with connect(golden, read_only=True) as con:
        rows = con.execute("SELECT gate, expectation, success, severity, report FROM dq_results WHERE cycle = ?",
                           [CYCLE]).fetchall()
    assert sorted((g, e) for g, e, *_ in rows) == sorted((g, c.name) for g, cs in suites(golden).items() for c in cs)
    assert all(ok and sev == "fail" and report is None for _, _, ok, sev, report in rows)
    assert not (Path(golden.data_dir) / "quality" / f"{CYCLE:05d}").exists()  # gate_reports = problems


def test_every_gate_writes_its_report_when_asked(state: Settings) -> None:
    always = replace(state, gate_reports="always")
    reports = [stages.gate(always, stage, CYCLE, shards(state)).report / "index.html" for stage in STAGES]
    with connect(state, read_only=True) as con:
        stored = con.execute("SELECT DISTINCT report FROM dq_results WHERE cycle = ?", [CYCLE]).fetchall()
    assert sorted(stored) == sorted((str(p),) for p in reports)
    assert all(p.is_file() and "<html" in p.read_text().lower() for p in reports)
    # A page per dataset the gate checks, linked from its index; GX's fonts and images are one file however many
    # reports use them.
    for stage, p in zip(STAGES, reports, strict=True):
        pages = sorted(q.relative_to(p.parent).as_posix() for q in p.parent.rglob("*.html") if q != p)
        assert len(pages) == len({c.dataset for c in suites(state)[stage]}), pages
        assert all(page.startswith("validations/") and page in p.read_text() for page in pages)
    logos = [p.parent / "static" / "images" / "logo-long.png" for p in reports]
    assert len({logo.stat().st_ino for logo in logos}) == 1 and logos[0].stat().st_nlink > 4


@pytest.mark.parametrize("check", sorted(CORRUPTIONS))
def test_the_gate_fails_on_its_corruption(state: Settings, check: str) -> None:
    stage, corrupt = CORRUPTIONS[check]
    changed = corrupt(state)
    s = changed if isinstance(changed, Settings) else state
    with pytest.raises(GateFailed) as failed:
        stages.gate(s, stage, CYCLE, shards(s))
    message = str(failed.value)
    head = f"gate {stage} failed for cycle {CYCLE} on "
    assert message.startswith(head) and f"FAIL {check}:" in message
    assert check in message.splitlines()[0].removeprefix(head).split(":")[0].split(", ")  # the first line names it
    with connect(s, read_only=True) as con:
        failing = con.execute("SELECT expectation FROM dq_results WHERE cycle = ? AND gate = ? AND NOT success",
                              [CYCLE, stage]).fetchall()
        (report,) = con.execute("SELECT DISTINCT report FROM dq_results WHERE cycle = ? AND gate = ?",
                                [CYCLE, stage]).fetchall()[0]
    assert (check,) in failing
    assert f"report: {report}" in message and Path(report).is_file()  # a gate with a problem writes its report


def test_a_check_set_to_warn_is_recorded_but_lets_the_cycle_go_on(state: Settings) -> None:
    sql(f"UPDATE frontier SET status = 'unfetched' WHERE url = {CRAWLED}")(state)
    warned = replace(state, gate_warn="frontier_crawled_disjoint")
    report = stages.gate(warned, "update", CYCLE)
    assert "WARN frontier_crawled_disjoint: 1 rows" in report.message(CYCLE)
    with connect(state, read_only=True) as con:
        assert con.execute("SELECT success, severity, failed_rows FROM dq_results WHERE expectation = "
                           "'frontier_crawled_disjoint' AND cycle = ?", [CYCLE]).fetchall() == [(False, "warn", 1)]
    with pytest.raises(ValueError, match="gate_warn: unknown checks no_such_check"):
        stages.gate(replace(state, gate_warn="no_such_check"), "update", CYCLE)


def test_distribution_checks_skip_small_samples(state: Settings) -> None:
    CORRUPTIONS["error_share"][1](state)
    report = stages.gate(replace(state, gate_min_sample=10_000), "fetch", CYCLE, shards(state))
    skipped = next(o for o in report.outcomes if o.check == "error_share")
    assert skipped.success and skipped.observed.startswith("skipped:")


def test_check_command_runs_one_gate_and_exits_nonzero_on_failure(state: Settings, tmp_path: Path) -> None:
    write_toml(state, tmp_path / "s.toml")
    exe = Path(sys.executable).with_name("crawlcycle")

    def check(stage: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(exe), "check", stage, "--cycle", str(CYCLE), "--config", str(tmp_path / "s.toml")],
                              capture_output=True, text=True, timeout=120)

    ok = check("parse")
    assert ok.returncode == 0 and f"gate parse passed for cycle {CYCLE}" in ok.stdout and "report:" not in ok.stdout
    batch_row(state, _crawled(state)[0])
    bad = check("materialize")
    assert bad.returncode == 1 and "FAIL batch_not_crawled: 1 rows" in bad.stdout


@pytest.mark.parametrize("table", ["batches", "pages", "fetch_log", "frontier"])
def test_duplicating_a_stored_row_is_refused_by_its_key(state: Settings, table: str) -> None:
    """Keys of the DuckDB tables are primary keys, so a duplicate batch (or page, ...) row cannot be stored; the
    key checks of the gates guard the shard files, where nothing enforces them. (links has no key index: update
    keeps its rows distinct, tests/test_update.py.)"""
    with connect(state) as con, pytest.raises(duckdb.ConstraintException, match="Duplicate key"):
        con.execute(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
