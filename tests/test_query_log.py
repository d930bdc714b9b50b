"""Query-log partitions in both forms (aggregated and impressions), as TSV and Parquet files on disk, ingested
into a real DuckDB file."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.db import migrate
from crawlcycle.ranking.query_log import ingest_partition, page_impressions, partition_dir, read_partition
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings

DAY = date(2026, 11, 1)
COLUMNS = "query, frequency, time, shown_url, rank, clicked"


@pytest.fixture
def log_settings(tmp_path: Path) -> Settings:
    return load_settings(overrides={"user_agent": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)",
                                    "query_log_dir": str(tmp_path / "query_log")}, environ={})


@pytest.fixture
def con(tmp_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(tmp_path / "crawl.duckdb"))
    migrate(con)
    yield con
    con.close()


def write_tsv(settings: Settings, name: str, lines: list[str], day: date = DAY) -> Path:
    path = partition_dir(settings.query_log_dir, day) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def write_parquet(settings: Settings, name: str, frame: pl.DataFrame, day: date = DAY) -> Path:
    path = partition_dir(settings.query_log_dir, day) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path


def stored(con: duckdb.DuckDBPyConnection, day: date = DAY) -> list[tuple]:
    return con.execute(f"SELECT {COLUMNS} FROM query_log WHERE partition = ? "
                       "ORDER BY query, time NULLS FIRST, rank NULLS FIRST", [day]).fetchall()


def searches(con: duckdb.DuckDBPyConnection, day: date = DAY) -> dict[str, float]:
    rows = con.execute("SELECT query, sum(frequency) FROM query_log WHERE partition = ? GROUP BY query",
                       [day]).fetchall()
    return {q: round(f, 9) for q, f in rows}


def test_aggregated_tsv_and_parquet(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "a.tsv", ["python lists\t3", "Python Lists\t2", "rust traits\t1.5"])
    write_parquet(log_settings, "b.parquet", pl.DataFrame({"query": ["Ｐｙｔｈｏｎ  Lists", "go maps"],
                                                           "frequency": [4, 1]}))
    assert ingest_partition(con, log_settings, DAY) == 3
    assert stored(con) == [("go maps", 1.0, None, None, None, None),
                           ("python lists", 9.0, None, None, None, None),
                           ("rust traits", 1.5, None, None, None, None)]


def test_impressions_tsv(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "impressions.tsv", [
        "2026-11-01T08:15:02\tPython Lists\tHTTP://Docs.Example.org:80/a/../lists?utm_source=x&b=2&a=1\t1\t0",
        "2026-11-01T08:15:02\tPython Lists\thttp://docs.example.org/tutorial\t2\tTRUE",
        "2026-11-01 11:15:02.5+02:00\tpython   lists\thttp://docs.example.org/lists\t1\t1",
        "2026-11-01T23:59:59Z\tgo maps\thttp://a.test/\t 7 \tFalse",
    ])
    assert ingest_partition(con, log_settings, DAY) == 4
    assert stored(con) == [
        ("go maps", 1.0, datetime(2026, 11, 1, 23, 59, 59), "http://a.test/", 7, False),
        ("python lists", 0.5, datetime(2026, 11, 1, 8, 15, 2), "http://docs.example.org/lists?a=1&b=2", 1, False),
        ("python lists", 0.5, datetime(2026, 11, 1, 8, 15, 2), "http://docs.example.org/tutorial", 2, True),
        ("python lists", 1.0, datetime(2026, 11, 1, 9, 15, 2, 500000), "http://docs.example.org/lists", 1, True)]


def test_two_searches_count_as_two(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "impressions.tsv", [
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/1\t1\t0",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/2\t2\t1",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/3\t3\t0",
        "2026-11-01T09:00:00Z\tpython lists\thttp://a.test/1\t1\t1",
        "2026-11-01T09:00:00Z\tpython lists\thttp://a.test/4\t2\t0",
    ])
    assert ingest_partition(con, log_settings, DAY) == 5
    assert searches(con) == {"python lists": 2.0}
    assert [(r[1], r[3], r[4], r[5]) for r in stored(con)] == [
        (pytest.approx(1 / 3), "http://a.test/1", 1, False), (pytest.approx(1 / 3), "http://a.test/2", 2, True),
        (pytest.approx(1 / 3), "http://a.test/3", 3, False), (0.5, "http://a.test/1", 1, True),
        (0.5, "http://a.test/4", 2, False)]


def test_two_searches_in_one_second_count_as_two(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "impressions.tsv", [
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/1\t1\t0",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/2\t2\t0",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/1\t1\t1",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/3\t2\t0",
        "2026-11-01T08:15:02\tpython lists\thttp://a.test/5\t3\t0",
    ])
    ingest_partition(con, log_settings, DAY)
    assert searches(con) == {"python lists": 2.0}


def test_impressions_parquet(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    berlin = pl.Series([datetime(2026, 11, 1, 9, 0, 0, tzinfo=UTC)] * 2).dt.convert_time_zone("Europe/Berlin")
    write_parquet(log_settings, "typed.parquet", pl.DataFrame({
        "time": berlin, "query": ["rust traits"] * 2, "url": ["http://a.test/t", "http://a.test/u"],
        "rank": [1, 2], "clicked": [True, False], "user": ["x", "y"]}))
    write_parquet(log_settings, "text.parquet", pl.DataFrame({
        "time": ["2026-11-01T07:30:00.250-01:00"], "query": ["go maps"], "url": ["http://a.test/g"],
        "rank": ["4"], "clicked": ["0"]}))
    assert ingest_partition(con, log_settings, DAY) == 3
    assert stored(con) == [
        ("go maps", 1.0, datetime(2026, 11, 1, 8, 30, 0, 250000), "http://a.test/g", 4, False),
        ("rust traits", 0.5, datetime(2026, 11, 1, 9), "http://a.test/t", 1, True),
        ("rust traits", 0.5, datetime(2026, 11, 1, 9), "http://a.test/u", 2, False)]


def test_normalisation_is_the_same_in_both_forms(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "aggregated.tsv", ["Ｐｙｔｈｏｎ  Lists\t3"])
    write_tsv(log_settings, "impressions.tsv", ["2026-11-01T08:00:00\t  PYTHON\u3000lists \thttp://a.test/\t1\t0"])
    write_parquet(log_settings, "impressions.parquet", pl.DataFrame({
        "time": ["2026-11-01T09:00:00"], "query": ["python\tLISTS"], "url": ["http://a.test/"], "rank": [1],
        "clicked": [1]}))
    assert ingest_partition(con, log_settings, DAY) == 3
    assert searches(con) == {"python lists": 5.0}


def test_empty_queries_dropped_and_rejected_urls_kept(con: duckdb.DuckDBPyConnection,
                                                      log_settings: Settings) -> None:
    write_tsv(log_settings, "aggregated.tsv", ["python lists\t2", "\u3000 \t7"])
    write_tsv(log_settings, "impressions.tsv", [
        "2026-11-01T08:00:00\tgo maps\thttp://a.test/setup.exe\t1\t1",
        "2026-11-01T08:00:00\tgo maps\t\t2\t0",
        "2026-11-01T08:00:00\tgo maps\thttp://a.test/maps\t3\t0",
        "2026-11-01T08:00:01\t \thttp://a.test/maps\t1\t0",
    ])
    part = read_partition(log_settings, DAY)
    assert (part.empty_queries, part.rejected_urls) == (2, 2)
    assert ingest_partition(con, log_settings, DAY) == 4
    assert [(r[0], r[3], r[4]) for r in stored(con)] == [
        ("go maps", None, 1), ("go maps", None, 2), ("go maps", "http://a.test/maps", 3), ("python lists", None, None)]
    assert searches(con) == {"go maps": 1.0, "python lists": 2.0}


def test_reingest_replaces_partition(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "other-day.tsv", ["rust traits\t4"], day=date(2026, 11, 2))
    assert ingest_partition(con, log_settings, date(2026, 11, 2)) == 1
    write_tsv(log_settings, "a.tsv", ["python lists\t3"])
    removed = write_tsv(log_settings, "b.tsv", ["2026-11-01T08:00:00\tgo maps\thttp://a.test/\t1\t0"])
    assert ingest_partition(con, log_settings, DAY) == 2
    first = stored(con)
    assert ingest_partition(con, log_settings, DAY) == 2
    assert stored(con) == first
    removed.unlink()
    assert ingest_partition(con, log_settings, DAY) == 1
    assert stored(con) == [("python lists", 3.0, None, None, None, None)]
    assert stored(con, date(2026, 11, 2)) == [("rust traits", 4.0, None, None, None, None)]


def test_missing_partition_has_no_rows(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    assert read_partition(log_settings, DAY).rows.height == 0
    assert ingest_partition(con, log_settings, DAY) == 0
    assert stored(con) == []


GOOD = "2026-11-01T08:00:00\tpython lists\thttp://a.test/\t1\t0"


@pytest.mark.parametrize(("lines", "row", "problem"), [
    ([GOOD, "2026-11-01T25:00:00\tq\thttp://a.test/\t1\t0"], 2, "bad timestamp"),
    ([GOOD, "01/11/2026 08:00\tq\thttp://a.test/\t1\t0"], 2, "bad timestamp"),
    ([GOOD, "2026-11-01T08:00:00\tq\thttp://a.test/\t0\t0", GOOD], 2, "bad rank"),
    ([GOOD, "2026-11-01T08:00:00\tq\thttp://a.test/\t2.5\t0"], 2, "bad rank"),
    ([GOOD, GOOD, "2026-11-01T08:00:00\tq\thttp://a.test/\t1\tyes"], 3, "bad clicked"),
    (["2026-11-01T08:00:00\t\thttp://a.test/\t1\t0", GOOD], 1, "missing query"),
    ([GOOD, GOOD, "2026-11-01T08:00:00\tq\thttp://a.test/\t1"], 3, "expected 5 fields"),
    (["python lists\t3", "rust traits\t-1"], 2, "bad frequency"),
    (["python lists\t3", "rust traits\tmany"], 2, "bad frequency"),
    (["python lists\t3", "rust traits\t2\textra"], 2, "expected 2 fields"),
])
def test_bad_rows_fail_and_keep_partition(con: duckdb.DuckDBPyConnection, log_settings: Settings,
                                          lines: list[str], row: int, problem: str) -> None:
    write_tsv(log_settings, "good.tsv", ["python lists\t3"])
    ingest_partition(con, log_settings, DAY)
    before = stored(con)
    bad = write_tsv(log_settings, "broken.tsv", lines)
    with pytest.raises(ValueError) as error:
        ingest_partition(con, log_settings, DAY)
    message = str(error.value)
    assert "\n" not in message
    assert str(bad) in message and "1 bad rows" in message and f"row {row} ({problem})" in message
    assert stored(con) == before


def write_latin1(settings: Settings) -> Path:
    path = write_tsv(settings, "latin1.tsv", [])
    path.write_bytes("café\t1\n".encode("latin-1"))
    return path


@pytest.mark.parametrize("make", [
    lambda s: write_tsv(s, "three.tsv", ["a\tb\tc", "d\te\tf"]),
    write_latin1,
    lambda s: write_parquet(s, "wrong.parquet", pl.DataFrame({"q": ["python"], "n": [1]})),
    lambda s: write_parquet(s, "bad.parquet", pl.DataFrame({
        "time": ["2026-11-01T08:00:00"], "query": ["q"], "url": ["http://a.test/"], "rank": [-3], "clicked": [True]})),
])
def test_bad_files_fail_and_keep_partition(con: duckdb.DuckDBPyConnection, log_settings: Settings, make) -> None:
    write_tsv(log_settings, "good.tsv", ["python lists\t3"])
    ingest_partition(con, log_settings, DAY)
    bad = make(log_settings)
    with pytest.raises(ValueError, match=f"query log {bad}: "):
        ingest_partition(con, log_settings, DAY)
    assert stored(con) == [("python lists", 3.0, None, None, None, None)]


def test_page_impressions(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    write_tsv(log_settings, "aggregated.tsv", ["python lists\t30"])
    write_tsv(log_settings, "impressions.tsv", [
        "2026-11-01T08:00:00\tpython lists\thttp://a.test/1\t1\t1",
        "2026-11-01T08:00:00\tpython lists\thttp://a.test/2\t2\t0",
        "2026-11-01T08:00:00\tpython lists\thttp://a.test/3\t3\t1",
        "2026-11-01T08:00:00\tpython lists\thttp://a.test/x.exe\t4\t1",
        "2026-11-01T09:00:00\tgo maps\thttp://a.test/3\t1\t0",
        "2026-11-01T09:00:00\tgo maps\thttp://a.test/1\t2\t1",
    ])
    write_tsv(log_settings, "next.tsv", ["2026-11-02T08:00:00\tgo maps\thttp://a.test/1\t1\t1"], day=date(2026, 11, 2))
    ingest_partition(con, log_settings, DAY)
    ingest_partition(con, log_settings, date(2026, 11, 2))
    assert page_impressions(con, DAY, 2).rows() == [("http://a.test/1", 2, 2), ("http://a.test/2", 1, 0),
                                                    ("http://a.test/3", 1, 1)]
    assert page_impressions(con, DAY, 10)["views"].to_list() == [2, 1, 2]
    assert page_impressions(con, date(2026, 11, 3), 10).columns == ["url", "views", "clicks"]


@pytest.mark.parametrize(("header", "rows"), [
    ("query\tfrequency", ["python lists\t3", "rust traits\t2"]),
    ("Query\tFrequency", ["python lists\t3"]),
    ("timestamp\tquery\turl\trank\tclicked", ["2026-11-01T08:00:00\tpython lists\thttp://a.test/1\t1\t1"]),
    ("TIME\tQUERY\tURL\tRANK\tCLICKED", ["2026-11-01T08:00:00\tpython lists\thttp://a.test/1\t1\t0"]),
])
def test_a_header_line_is_skipped(con: duckdb.DuckDBPyConnection, log_settings: Settings, tmp_path: Path,
                                  header: str, rows: list[str]) -> None:
    write_tsv(log_settings, "with-header.tsv", [header, *rows])
    ingest_partition(con, log_settings, DAY)
    plain = load_settings(overrides={"query_log_dir": str(tmp_path / "plain")}, environ={})
    write_tsv(plain, "plain.tsv", rows)
    assert stored(con) == read_partition(plain, DAY).rows.rows()


def test_a_header_only_counts_on_the_first_line(con: duckdb.DuckDBPyConnection, log_settings: Settings) -> None:
    bad = write_tsv(log_settings, "late-header.tsv", ["python lists\t3", "query\tfrequency"])
    with pytest.raises(ValueError, match=f"query log {bad}: 1 bad rows of 2; first, row 2 \\(bad frequency\\)"):
        ingest_partition(con, log_settings, DAY)


@pytest.mark.parametrize("missing", ["latest", "empty", "fail"])
def test_a_cycle_without_its_partition_does_what_the_setting_says(tmp_path: Path, missing: str) -> None:
    from crawlcycle.db import connect
    from crawlcycle.pipeline.stages import begin
    from crawlcycle.ranking.query_log import QueryLogError

    s = load_settings(overrides={"query_log_dir": str(tmp_path / "query_log"), "db_path": str(tmp_path / "c.duckdb"),
                                 "data_dir": str(tmp_path / "data"), "missing_query_log": missing,
                                 "user_agent": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"}, environ={})
    write_tsv(s, "a.tsv", ["old query\t3"], day=date(2026, 10, 30))
    write_tsv(s, "a.tsv", ["python decorators\t5", "duckdb join\t2"])
    (partition_dir(s.query_log_dir, date(2026, 11, 2))).mkdir()  # a folder without a file is missing too
    assert begin(s, DAY) == 1
    with connect(s) as con:
        con.execute("UPDATE cycles SET status = 'done'")
    late = date(2026, 11, 3)
    if missing == "fail":
        with pytest.raises(QueryLogError) as e:
            begin(s, late)
        assert str(e.value) == (f"query log: no partition for 2026-11-03 in {partition_dir(s.query_log_dir, late)} "
                                "(setting missing_query_log = fail)")
        with connect(s, read_only=True) as con:  # nothing written: the cycle may run when the partition lands
            assert con.execute("SELECT count(*) FROM cycles").fetchall() == [(1,)]
        return
    assert begin(s, late) == 2
    with connect(s, read_only=True) as con:
        summary = con.execute("SELECT cycle, query_log FROM v_cycle_summary ORDER BY cycle").fetchall()
        read = searches(con, late)
    # the latest earlier partition with a file is 11-01 (11-02 has none), never the older 10-30
    want = {"latest": ([(1, "2 rows"), (2, "missing: read 2026-11-01, 2 rows")],
                       {"python decorators": 5.0, "duckdb join": 2.0}),
            "empty": ([(1, "2 rows"), (2, "missing: empty")], {})}[missing]
    assert (summary, read) == want
