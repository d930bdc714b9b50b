"""The crawlcycle command as a user runs it, against the demo web on loopback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import polars as pl

from crawlcycle.db import connect
from crawlcycle.settings import Settings, write_toml

EXE = str(Path(sys.executable).with_name("crawlcycle"))


def _run(*args: str, config: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, *args, "--config", str(config)], input=stdin, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})


def test_fetch_command_logs_every_url_and_exits_zero(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    urls = tmp_path / "urls.txt"
    home = Path(settings.seeds_file).read_text().split()[0]
    urls.write_text(f"{home}\n{home}no-such-page.html\nftp://example.org/file\n")
    res = _run("fetch", "--urls", str(urls), "--out", str(tmp_path / "out"), config=tmp_path / "s.toml")
    assert res.returncode == 0, res.stderr
    log = pl.read_parquet(tmp_path / "out" / "fetch_log.parquet")
    assert dict(zip(log["url"], log["outcome"], strict=True)) == {
        home: "fetched", f"{home}no-such-page.html": "gone", "ftp://example.org/file": "gone"}
    assert list((tmp_path / "out").glob("*.warc.gz"))


def test_bad_arguments_fail_with_one_line(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    res = _run("fetch", "--urls", str(tmp_path / "missing.txt"), "--out", str(tmp_path), config=tmp_path / "s.toml")
    assert res.returncode == 2 and res.stderr.strip().count("\n") == 0 and "missing.txt" in res.stderr
    res = _run("report", "--min-delay", "fast", config=tmp_path / "s.toml")
    assert (res.returncode, res.stderr.strip()) == (2, "crawlcycle: setting min_delay: expected float, got 'fast'")


def test_init_cycle_report(settings: Settings, tmp_path: Path) -> None:
    write_toml(settings, tmp_path / "s.toml")
    cfg = tmp_path / "s.toml"
    assert "seed URLs admitted" in _run("init", config=cfg).stdout
    res = _run("cycle", "--date", "2026-11-01", config=cfg)
    assert res.returncode == 0, res.stderr
    assert "cycle 1:" in res.stdout and "next batch" in res.stdout
    report = _run("report", config=cfg).stdout
    assert "2026-11-01" in report and "done" in report
    # the gates' cost, GX import apart: this process-per-command run paid the import in its cycle's first gate
    gates = re.search(r"cycle 1 quality gates: validation ([\d.]+) s \+ GX import ([\d.]+) s, (\d+) % of", report)
    assert gates and float(gates[1]) > 0 and float(gates[2]) > 0
    # the report ends with the head of the next batch, whose first URL is the batch's rank 1
    with connect(settings, read_only=True) as con:
        first = con.execute("SELECT url FROM batches WHERE cycle = 2 AND rank = 1").fetchall()[0][0]
    assert "head of the next batch" in report and first[:60] in report.split("head of the next batch")[1]


def test_canon_prints_one_line_per_input(tmp_path: Path, settings: Settings) -> None:
    write_toml(settings, tmp_path / "s.toml")
    res = _run("canon", config=tmp_path / "s.toml", stdin="HTTP://Example.COM:80/a/./b/../c#frag\nmailto:x@y\n")
    assert res.stdout.splitlines() == ["http://example.com/a/c", "-\tbad_scheme"]


def test_setting_flags_mean_the_same_in_every_command(tmp_path: Path, settings: Settings) -> None:
    # `simulate` gives --policy and --snapshot meanings of its own; elsewhere they stay settings
    write_toml(settings, tmp_path / "s.toml")
    res = _run("settings", "--policy", "pagerank", "--snapshot", "x.warc.gz", config=tmp_path / "s.toml")
    assert "policy = 'pagerank'" in res.stdout and "x.warc.gz'" in res.stdout, res.stderr
