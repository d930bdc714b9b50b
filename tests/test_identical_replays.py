"""Two crawls of one snapshot with one build leave the same bits: the simulator run twice over three sites cut from
../shared/corpus/dev-docs.warc.gz, each time in a fresh database, with several DuckDB threads, gives the same
fetch order (order.csv, byte for byte) and the same rows in every table, model metrics included.

A float sum over rows that DuckDB's threads add in whatever order they finish, or rows fed to a fit in no defined
order, changes a model's fit in its last digits (``model_runs.metrics``), and through its predictions the sketches,
the odds and the scores."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.db import RANK_DIGITS, connect, migrate, sum_offset
from crawlcycle.devtools.table_digest import table_digest
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT
from tests.support.three_sites import simulate_three_sites, three_site_settings

CYCLES = 3
# S' trains on every query: enough pairs that DuckDB's threads split the sums over them
REPLAYED = {"s_prime_queries": 3000, "duckdb_threads": 4}


def _simulate(three_sites: dict[str, Path], out: Path) -> tuple[dict[str, str], bytes, int]:
    """One hybrid crawl of ``CYCLES`` cycles in ``out`` (its database made anew): its tables' digests, its order.csv
    and how many cycles fitted S'."""
    work = simulate_three_sites(three_sites, out, CYCLES, **REPLAYED).resolve().parent
    crawled = three_site_settings(**REPLAYED, db_path=str(work / "crawl.duckdb"), data_dir=str(work / "data"))
    with duckdb.connect(crawled.db_path, read_only=True) as con:
        (fits,) = con.execute("SELECT count(*) FROM model_runs WHERE model = 's_prime' AND file IS NOT NULL").fetchone()
    return table_digest(crawled), (out / "order.csv").read_bytes(), fits


def test_two_crawls_of_a_snapshot_leave_the_same_tables_and_order(three_sites: dict[str, Path], tmp_path: Path) -> None:
    # one folder for both crawls: model_runs names each model's file by its path
    first, second = (_simulate(three_sites, tmp_path / "out") for _ in range(2))
    tables, order, fits = first
    assert fits >= 2  # S' and its odds were fitted and steered the later cycles
    differing = sorted(t for t in tables.keys() | second[0].keys() if tables.get(t) != second[0].get(t))
    assert not differing, f"tables that differ between the two crawls: {differing}"
    assert order == second[1]


def test_exact_sums_do_not_depend_on_the_order_rows_are_added_in(tmp_path: Path) -> None:
    values = [0.1 * k + 1e-7 / k for k in range(1, 200)]
    with duckdb.connect(str(tmp_path / "crawl.duckdb"), config={"threads": 1}) as con:
        migrate(con)
        sums = set()
        for order in (values, values[::-1], sorted(values, key=lambda v: (v * 1e6) % 1)):
            con.execute("CREATE OR REPLACE TEMP TABLE t AS SELECT unnest(?::DOUBLE[]) AS x", [order])
            sums.add(con.execute("SELECT sum(x), exact_sum(x), exact_avg(x) FROM t").fetchone())
    assert len({s[0] for s in sums}) > 1  # a float sum: the last digits depend on the order (one thread here)
    assert len({s[1:] for s in sums}) == 1
    ((total, mean),) = {s[1:] for s in sums}
    assert total == pytest.approx(sum(values), abs=1e-9 * len(values)) and mean == total / len(values)


def test_a_perturbation_seed_moves_exact_sums_and_breaks_ties_another_way(tmp_path: Path) -> None:
    values = [0.1 * k + 1e-7 / k + 3.3e-10 for k in range(1, 200)]
    sums, noise = {}, {}
    for seed in (0, 1, 2, 1):
        s = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "db_path": str(tmp_path / "c.duckdb"),
                                                 "data_dir": str(tmp_path / "data"), "perturb_seed": seed})
        with connect(s) as con:
            migrate(con)
            con.execute("CREATE OR REPLACE TEMP TABLE t AS SELECT unnest(?::DOUBLE[]) AS x", [values])
            got = con.execute("SELECT exact_sum(x) FROM t").fetchone()[0]
            drawn = [v for (v,) in con.execute("SELECT perturbation('http://a.test/' || i) FROM range(50) r(i) "
                                               "ORDER BY i").fetchall()]
        assert sums.setdefault(seed, got) == got and noise.setdefault(seed, drawn) == drawn  # the same seed, the same
    assert len(set(sums.values())) == 3  # each seed its own last digits ...
    assert all(abs(v - sum(values)) <= 1e-9 * len(values) for v in sums.values())  # ... within a nano-unit a row
    assert set(noise[0]) == {0.0} and noise[1] != noise[2]  # no noise without a seed; each seed its own
    assert all(-0.5 <= v < 0.5 for v in noise[1] + noise[2]) and len(set(noise[1])) == 50
    # URLs of one priority: the seed, not their spelling, decides which goes first, and another seed another way
    assert any((noise[1][k] < noise[1][k + 1]) != (noise[2][k] < noise[2][k + 1]) for k in range(49))
    assert all(abs(sum_offset(k)) <= 0.5 for k in range(1, 20))


def test_orders_compare_scores_at_six_significant_digits(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "crawl.duckdb")) as con:
        migrate(con)
        keys = con.execute("SELECT rank_key(x) FROM unnest([2.1076242084, 2.1076242075, 1.234564e-5, 1.234566e-5, "
                           "0.0, -3.25, 123456789.0]::DOUBLE[]) t(x)").fetchall()
    # two scores a last digit apart tie, and a stable key breaks the tie; six digits of any size stay apart
    assert [k for (k,) in keys] == [2.10762, 2.10762, 1.23456e-5, 1.23457e-5, 0.0, -3.25, 123457000.0]
    assert pl.Series([2.1076242084, 1.234566e-5]).round_sig_figs(RANK_DIGITS).to_list() == [2.10762, 1.23457e-5]
