"""The crawlcycle command as a user runs it, against the demo web on loopback."""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import polars as pl

from crawlcycle.db import connect
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml
from tests.support.cli import EXE, run_cli


def test_fetch_command_logs_every_url_and_exits_zero(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    urls = tmp_path / "urls.txt"
    home = Path(settings.seeds_file).read_text().split()[0]
    urls.write_text(f"{home}\n{home}no-such-page.html\nftp://example.org/file\n")
    res = run_cli("fetch", "--urls", str(urls), "--out", str(tmp_path / "out"), config=tmp_path / "s.toml")
    assert res.returncode == 0, res.stderr
    log = pl.read_parquet(tmp_path / "out" / "fetch_log.parquet")
    assert dict(zip(log["url"], log["outcome"], strict=True)) == {
        home: "fetched", f"{home}no-such-page.html": "gone", "ftp://example.org/file": "gone"}
    assert list((tmp_path / "out").glob("*.warc.gz"))


def test_bad_arguments_fail_with_one_line(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    res = run_cli("fetch", "--urls", str(tmp_path / "missing.txt"), "--out", str(tmp_path), config=tmp_path / "s.toml")
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0 and "missing.txt" in res.stderr
    res = run_cli("cycle", "--min-delay", "fast", config=tmp_path / "s.toml")
    assert (res.returncode, res.stderr.strip()) == (2, "crawlcycle: setting min_delay: expected float, got 'fast' "
                                                       "(from flag --min-delay)")
    # a flag of a section the command does not use, and a missing argument: one line each
    res = run_cli("report", "--min-delay", "2", config=tmp_path / "s.toml")
    assert (res.returncode, res.stderr) == (2, "crawlcycle report: unrecognized arguments: --min-delay 2 (the "
                                               "options and settings it takes: crawlcycle report --help)\n")
    res = run_cli("check", "fetch", config=tmp_path / "s.toml")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--cycle" in res.stderr, res.stderr


def test_init_cycle_report(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    cfg = tmp_path / "s.toml"
    assert "seed URLs admitted" in run_cli("init", config=cfg).stdout
    res = run_cli("cycle", "--date", "2026-11-01", config=cfg)
    assert res.returncode == 0, res.stderr
    assert "cycle 1:" in res.stdout and "next batch" in res.stdout
    report = run_cli("report", config=cfg).stdout
    assert "2026-11-01" in report and "done" in report
    # the gates' cost, GX import apart: this process-per-command run paid the import in its cycle's first gate
    gates = re.search(r"cycle 1 quality gates: validation ([\d.]+) s \+ GX import ([\d.]+) s, (\d+) % of", report)
    assert gates and float(gates[1]) > 0 and float(gates[2]) > 0
    # the report ends with the head of the next batch, whose first URL is the batch's rank 1
    with connect(settings, read_only=True) as con:
        first = con.execute("SELECT url FROM batches WHERE fetch_cycle = 2 AND rank = 1").fetchall()[0][0]
    assert "head of the next batch" in report and first[:60] in report.split("head of the next batch")[1]


def test_canon_prints_one_line_per_input(tmp_path: Path, settings: Settings) -> None:
    write_toml(settings, tmp_path / "s.toml")
    res = run_cli("canon", config=tmp_path / "s.toml", stdin="HTTP://Example.COM:80/a/./b/../c#frag\nmailto:x@y\n")
    assert res.stdout.splitlines() == ["http://example.com/a/c", "-\tbad_scheme"]


def test_setting_flags_mean_the_same_in_every_command(tmp_path: Path, settings: Settings) -> None:
    # `simulate` gives --policy and --snapshot meanings of its own; elsewhere they stay settings
    write_toml(settings, tmp_path / "s.toml")
    res = run_cli("settings", "--policy", "pagerank", "--snapshot", "x.warc.gz", config=tmp_path / "s.toml")
    assert "policy = 'pagerank'" in res.stdout and "x.warc.gz'" in res.stdout, res.stderr


def _run_in(folder: Path, *args: str, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command as typed in ``folder``: no --config and, unless ``env`` says, no CRAWLCYCLE_* variable."""
    return subprocess.run([EXE, *args], cwd=folder, input=stdin, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **(env or {})})


def test_the_command_reads_the_crawlcycle_toml_of_its_folder_or_above(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "sub" / "deeper").mkdir(parents=True)
    (project / "crawlcycle.toml").write_text('[ordering]\nbatch_size = 7\n[storage]\ndb_path = "state/crawl.duckdb"\n')
    for folder in (project, project / "sub" / "deeper"):
        res = _run_in(folder, "settings")
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert lines[0] == f"# config: {project / 'crawlcycle.toml'}"
        # each value not at its default says where it came from
        file = f"  # file {project / 'crawlcycle.toml'}"
        assert f"batch_size = 7{file}" in lines and f"db_path = '{project / 'state' / 'crawl.duckdb'}'{file}" in lines
    # $CRAWLCYCLE_CONFIG and --config come before the search
    (tmp_path / "other.toml").write_text("batch_size = 9\n")
    res = _run_in(project, "settings", env={"CRAWLCYCLE_CONFIG": str(tmp_path / "other.toml")})
    assert res.stdout.splitlines()[:1] == [f"# config: {tmp_path / 'other.toml'}"] and "batch_size = 9" in res.stdout
    res = _run_in(project, "settings", "--config", str(tmp_path / "other.toml"))
    assert f"batch_size = 9  # file {tmp_path / 'other.toml'}" in res.stdout.splitlines()
    res = _run_in(project, "settings", "--batch-size", "8", env={"CRAWLCYCLE_MIN_DELAY": "2"})
    assert {"batch_size = 8  # flag --batch-size", "min_delay = 2.0  # environment CRAWLCYCLE_MIN_DELAY"} <= set(
        res.stdout.splitlines())
    res = _run_in(tmp_path, "settings")
    assert res.returncode == 0 and res.stdout.startswith("# config: none") and "batch_size = 400" in res.stdout
    assert "#" not in res.stdout.split("\n", 1)[1]  # every value at its default


def test_only_commands_that_fetch_need_a_user_agent(settings: Settings, tmp_path: Path) -> None:
    write_toml(replace(settings, user_agent=""), tmp_path / "crawlcycle.toml")
    res = _run_in(tmp_path, "init")
    assert res.returncode == 0 and "seed URLs admitted" in res.stdout, res.stderr
    assert "no cycles yet" in _run_in(tmp_path, "report").stdout
    res = _run_in(tmp_path, "sql", "SELECT count(*) AS seeds FROM frontier")
    assert res.returncode == 0 and "seeds" in res.stdout, res.stderr
    assert _run_in(tmp_path, "canon", stdin="HTTP://A.test/x#y\n").stdout == "http://a.test/x\n"
    for args in (("cycle", "--date", "2026-11-01"), ("fetch", "--urls", "u.txt", "--out", "out")):
        res = _run_in(tmp_path, *args)
        assert res.returncode == 2 and res.stderr.startswith("crawlcycle: setting user_agent: required"), res.stderr
    with connect(settings, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM cycles").fetchall() == [(0,)]
