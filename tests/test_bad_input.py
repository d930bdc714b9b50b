"""Bad input, as a user meets it through the crawlcycle command: one line on stderr naming the file (or
setting) and the reason, exit status 2, no traceback, and nothing valid lost."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from crawlcycle.db import connect, migrate
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings, write_toml
from tests.support.cli import EXE, run_cli
from tests.support.demo import USER_AGENT
from tests.support.net import free_port


def _one_line(res: subprocess.CompletedProcess, *words: str) -> str:
    """The one stderr line of a command that refused its input with status 2; it holds every one of ``words``."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crawlcycle: "), res.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def _config(tmp_path: Path, **overrides: object) -> tuple[Path, Settings]:
    """A settings file with the crawl database and data under ``tmp_path``; no user agent (nothing here fetches)."""
    settings = load_settings(environ={}, overrides={"db_path": str(tmp_path / "crawl.duckdb"),
                                                    "data_dir": str(tmp_path / "data"), **overrides})
    write_toml(settings, tmp_path / "s.toml")
    return tmp_path / "s.toml", settings


def test_init_admits_the_valid_seeds_and_keeps_the_others_in_url_rejects(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# the demo's hosts\nhttp://a.demo.test/\nftp://a.demo.test/file\n\n"
                     "  http://b.demo.test/big.zip  \nhttp://b.demo.test/page.html\nnot a url\nHTTP://A.demo.test:80/\n")
    cfg, settings = _config(tmp_path, seeds_file=str(seeds))
    for run in (1, 2):  # a second init admits nothing new and records the same rejects once
        res = run_cli("init", config=cfg)
        assert res.returncode == 0, res.stderr
        admitted = 2 if run == 1 else 0
        assert f"{admitted} seed URLs admitted, 3 seed lines rejected" in res.stdout
        with connect(settings, read_only=True) as con:
            assert con.execute("SELECT url, source FROM frontier ORDER BY discovery_seq").fetchall() == [
                ("http://a.demo.test/", "seed"), ("http://b.demo.test/page.html", "seed")]
            assert con.execute("SELECT cycle, src, url, reason FROM url_rejects").fetchall() == [
                (0, str(seeds), "ftp://a.demo.test/file", "bad_scheme"),
                (0, str(seeds), "http://b.demo.test/big.zip", "binary_extension"),
                (0, str(seeds), "not a url", "malformed")]


@pytest.mark.parametrize(("text", "reason"), [
    ("", "holds no seed URL"),
    ("# nothing yet\n\n   \n", "holds no seed URL"),
    ("ftp://a.demo.test/\nmailto:me@example.org\n", "holds no valid seed URL: 2 lines rejected; first, line 1: "
                                                    "'ftp://a.demo.test/' (bad_scheme)"),
])
def test_a_seeds_file_without_a_valid_seed_stops_init(tmp_path: Path, text: str, reason: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(text)
    cfg, settings = _config(tmp_path, seeds_file=str(seeds))
    _one_line(run_cli("init", config=cfg), f"setting seeds_file: {seeds} ", reason)
    assert not Path(settings.db_path).exists()


def test_airflow_refuses_a_crawl_it_cannot_run(tmp_path: Path) -> None:
    _one_line(run_cli("airflow", config=tmp_path / "none.toml"), "--config", "none.toml: no settings file")
    cfg, settings = _config(tmp_path, user_agent=USER_AGENT)
    _one_line(run_cli("airflow", config=cfg), f"setting db_path: {settings.db_path}: no crawl database yet",
              "crawlcycle init --config")
    assert not (tmp_path / ".airflow").exists()  # nothing started, nothing set up


@pytest.mark.parametrize("command", [("init",), ("report",), ("sql", "SELECT 1")])
def test_a_db_path_that_is_not_a_duckdb_file(tmp_path: Path, command: tuple[str, ...]) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.demo.test/\n")
    cfg, settings = _config(tmp_path, seeds_file=str(seeds))
    Path(settings.db_path).write_text("my notes, not a database\n")
    _one_line(run_cli(*command, config=cfg), f"setting db_path: {settings.db_path} is not a DuckDB database")
    assert Path(settings.db_path).read_text() == "my notes, not a database\n"


def test_a_crawl_database_in_use_by_another_process(tmp_path: Path) -> None:
    cfg, settings = _config(tmp_path)
    with connect(settings) as con:  # this test's process holds the file; the command is another process
        migrate(con)
        line = _one_line(run_cli("report", config=cfg), f"setting db_path: {settings.db_path} is in use by another "
                                                     f"process (PID {os.getpid()})")
    assert "no cycles yet" in run_cli("report", config=cfg).stdout, line


def _warc_cases(tmp_path: Path) -> list[tuple[Path, str]]:
    """(path given as snapshot, the reason the message gives): missing, unreadable, not a WARC, empty."""
    (tmp_path / "folder.warc.gz").mkdir()
    (tmp_path / "notes.warc.gz").write_text("these are notes, not a web archive\n")
    (tmp_path / "empty.warc.gz").write_bytes(b"")
    cases = [(tmp_path / "missing.warc.gz", "does not exist"),
             (tmp_path / "folder.warc.gz", "cannot be read (Is a directory)"),
             (tmp_path / "notes.warc.gz", "is not a WARC file"),
             (tmp_path / "empty.warc.gz", "holds no WARC record")]
    if os.geteuid() != 0:  # root reads any file: there, the folder stands for an unreadable snapshot
        (tmp_path / "locked.warc.gz").write_bytes(b"")
        (tmp_path / "locked.warc.gz").chmod(0)
        cases.append((tmp_path / "locked.warc.gz", "cannot be read (Permission denied)"))
    return cases


def test_demo_web_refuses_a_snapshot_it_cannot_serve(tmp_path: Path) -> None:
    # a free port: were a snapshot served after all, it would not meet a running demo
    cfg, _ = _config(tmp_path, demo_port=free_port())
    for path, reason in _warc_cases(tmp_path):
        _one_line(run_cli("demo-web", "--serve", "--snapshot", str(path), config=cfg),
                  f"setting snapshot: {path} {reason}")


def test_simulate_refuses_a_snapshot_it_cannot_read(tmp_path: Path) -> None:
    cfg, _ = _config(tmp_path, user_agent=USER_AGENT)
    (tmp_path / "queries.tsv").write_text("python lists\t3\n")
    (tmp_path / "seeds.txt").write_text("http://a.demo.test/\n")
    for path, reason in _warc_cases(tmp_path):
        res = run_cli("simulate", "--snapshot", str(path), "--queries", str(tmp_path / "queries.tsv"),
                   "--seeds", str(tmp_path / "seeds.txt"), "--policy", "bfs", "--out", str(tmp_path / "out"),
                   config=cfg)
        _one_line(res, f"--snapshot: {path} {reason}")
        assert not (tmp_path / "out").exists()


def test_a_bad_query_log_row_stops_the_cycle_with_one_line(settings: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "log" / "dt=2026-11-01" / "queries.tsv"
    bad.parent.mkdir(parents=True)
    bad.write_text("query\tfrequency\npython lists\t3\nrust traits\tmany\n")
    write_toml(settings, tmp_path / "s.toml")
    cfg = tmp_path / "s.toml"
    assert run_cli("init", config=cfg).returncode == 0
    res = run_cli("cycle", "--date", "2026-11-01", "--query-log-dir", str(tmp_path / "log"), config=cfg)
    _one_line(res, f"query log {bad}: 1 bad rows of 2; first, row 3 (bad frequency)")
    with connect(settings, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM fetch_log").fetchall() == [(0,)]
        assert con.execute("SELECT count(*) FROM query_log").fetchall() == [(0,)]
    # the cycle shows as failed, with the reason, in the report; the next one waits and says how to finish this one
    report = run_cli("report", "--wide", config=cfg).stdout
    assert "failed: query log" in report and "row 3 (bad frequency)" in report, report
    _one_line(run_cli("cycle", "--date", "2026-11-02", "--query-log-dir", str(tmp_path / "log"), config=cfg),
              "cycle 1 (interval 2026-11-01) has not finished; run it again with `crawlcycle cycle --date 2026-11-01`")
    bad.write_text("query\tfrequency\npython lists\t3\n")  # fixed: the same day runs again and is done
    assert run_cli("cycle", "--date", "2026-11-01", "--query-log-dir", str(tmp_path / "log"),
                   config=cfg).returncode == 0
    assert "failed: query log" not in run_cli("report", "--wide", config=cfg).stdout


def test_a_query_log_folder_that_does_not_exist_is_a_settings_error(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    cfg = tmp_path / "s.toml"
    assert run_cli("init", config=cfg).returncode == 0
    typo = tmp_path / "query_logs"
    _one_line(run_cli("cycle", "--date", "2026-11-01", "--query-log-dir", str(typo), config=cfg),
              f"setting query_log_dir: {typo}: no such folder (from flag --query-log-dir)")
    with connect(settings, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cycles").fetchall() == [(0,)]


@pytest.mark.parametrize(("args", "environ", "words"), [
    (("--batch-size", "-1"), {}, "setting batch_size: must be at least 1, got -1 (from flag --batch-size)"),
    ((), {"CRAWLCYCLE_MIN_DELAY": "soon"},
     "setting min_delay: expected float, got 'soon' (from environment CRAWLCYCLE_MIN_DELAY)"),
    ((), {"CRAWLCYCLE_MAX_DELAY": "0.001"}, "setting max_delay: must be >= min_delay"),
])
def test_a_bad_value_from_the_environment_or_a_flag_names_where_it_came_from(
        tmp_path: Path, args: tuple[str, ...], environ: dict[str, str], words: str) -> None:
    cfg, _ = _config(tmp_path)
    res = subprocess.run([EXE, "settings", *args, "--config", str(cfg)], capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", **environ})
    line = _one_line(res, words)
    assert "(from " in line


def test_sql_cuts_long_texts_unless_wide(tmp_path: Path) -> None:
    (tmp_path / "seeds.txt").write_text("http://a.demo.test/\n")
    cfg, _ = _config(tmp_path, seeds_file=str(tmp_path / "seeds.txt"))
    assert run_cli("init", config=cfg).returncode == 0
    statement = "SELECT 'start ' || repeat('why ', 60) || 'end' AS why"
    cut, wide = (run_cli("sql", statement, *flag, config=cfg).stdout for flag in ((), ("--wide",)))
    assert "…" in cut and " end" not in cut, cut
    (row,) = [line for line in wide.splitlines() if "start" in line]
    assert "…" not in wide and row.rstrip(" │").endswith("why end"), wide


def test_a_demo_port_another_program_holds(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        cfg, _ = _config(tmp_path, demo_port=held.getsockname()[1], demo_hosts=6, demo_pages=120)
        _one_line(run_cli("demo-web", "--serve", config=cfg), f"setting demo_port: 127.0.0.1:{held.getsockname()[1]} "
                                                           "is in use by another program")


def test_a_cycle_started_before_the_one_before_it_finished(settings: Settings, tmp_path: Path) -> None:
    from datetime import date

    from crawlcycle.pipeline import stages

    write_toml(settings, tmp_path / "s.toml")
    stages.init(settings)
    stages.begin(settings, date(2026, 11, 1))  # opened, never finished
    _one_line(run_cli("cycle", "--date", "2026-11-02", config=tmp_path / "s.toml"),
              "cycle 1 (interval 2026-11-01) has not finished")


@pytest.mark.parametrize(("statement", "words"), [
    ("select count(*) from nosuch", ("Catalog Error", "nosuch")),
    ("DROP TABLE pages", ("read-only",)),
])
def test_a_bad_sql_statement_is_duckdbs_one_line_and_changes_nothing(tmp_path: Path, statement: str,
                                                                     words: tuple[str, ...]) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.demo.test/\n")
    cfg, settings = _config(tmp_path, seeds_file=str(seeds))
    assert run_cli("init", config=cfg).returncode == 0
    _one_line(run_cli("sql", statement, config=cfg), "crawlcycle: sql: ", *words)
    assert "1" in run_cli("sql", "SELECT count(*) AS n FROM pages UNION ALL SELECT 1", config=cfg).stdout


def test_a_quality_gate_stopping_a_cycle_ends_it_with_its_message_and_status_1(settings: Settings,
                                                                                tmp_path: Path) -> None:
    from dataclasses import replace

    strict = replace(settings, gate_min_links_per_page=1000.0, gate_min_sample=1)
    write_toml(strict, tmp_path / "s.toml")
    assert run_cli("init", config=tmp_path / "s.toml").returncode == 0
    res = run_cli("cycle", "--date", "2026-11-01", config=tmp_path / "s.toml")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    last = res.stderr.splitlines()[-1]
    assert last.startswith("crawlcycle: the cycle stopped at a quality gate: gate parse failed for cycle 1 on "), last
    assert "links_per_page" in last
    write_toml(settings, tmp_path / "s.toml")  # the cause fixed: the same date runs again
    assert run_cli("cycle", "--date", "2026-11-01", config=tmp_path / "s.toml").returncode == 0
