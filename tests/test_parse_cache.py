"""The parse cache: a cycle's parse output is the same, byte for byte, whether its records came from the cache or
were parsed (but the date of each page's record, which the page keeps beside what the parse made of it), and a setting
that changes parsing changes every key."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from dataclasses import replace
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq

from crawlcycle.parse import parse_cache
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings

PARSED = ("pages.parquet", "links.parquet", "rejects.parquet")


def _cycle(settings: Settings, folder: Path, **overrides: object) -> list[Path]:
    s = replace(settings, db_path=str(folder / "crawl.duckdb"), data_dir=str(folder / "data"), **overrides)
    stages.init(s)
    stages.run_cycle(s, date(2026, 11, 1), progress=lambda m: None)
    return sorted((folder / "data" / "cycles" / "00001").glob("shard-*"))


def _entries(path: Path) -> int:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT count(*) FROM parses").fetchone()[0]


def test_a_cycle_parses_the_same_with_and_without_the_cache(settings: Settings, tmp_path: Path) -> None:
    cache = tmp_path / "parse.sqlite"
    _cycle(settings, tmp_path / "fill", parse_cache=str(cache))  # the first run fills the cache
    filled = _entries(cache)
    assert filled > 0
    cached = _cycle(settings, tmp_path / "cached", parse_cache=str(cache))
    assert _entries(cache) == filled  # every record of the second run came from the cache
    plain = _cycle(settings, tmp_path / "plain")
    assert [d.name for d in cached] == [d.name for d in plain]
    for a, b in zip(cached, plain, strict=True):
        for name in PARSED:
            if name == "pages.parquet":  # the two crawls fetched at other times
                assert pq.read_table(a / name).drop(["fetched_at"]) == pq.read_table(b / name).drop(["fetched_at"])
            else:
                assert (a / name).read_bytes() == (b / name).read_bytes(), f"{a.name}/{name}"


def test_settings_that_change_parsing_change_the_key(settings: Settings) -> None:
    record = ("http://a.test/", 200, "text/html", "", "", "", b"<p>x</p>", False)
    key = parse_cache.record_key(record, parse_cache.fingerprint(settings))
    assert key == parse_cache.record_key(record, parse_cache.fingerprint(replace(settings, min_delay=9.0)))
    for name, value in (("max_outlinks_per_page", 7), ("sort_query_params", False), ("robots_token", "other"),
                        ("extractor", "resiliparse")):
        assert key != parse_cache.record_key(record, parse_cache.fingerprint(replace(settings, **{name: value})))
    for changed in (("http://a.test/b", *record[1:]), (*record[:5], '</b>; rel="canonical"', *record[6:]),
                    (*record[:6], b"<p>y</p>", False), (*record[:7], True)):
        assert key != parse_cache.record_key(changed, parse_cache.fingerprint(settings))


def _open_at(path: str, start: float, results: multiprocessing.Queue) -> None:
    while time.time() < start:  # every process opens the new file in the same instant
        pass
    try:
        parse_cache.ParseCache(path).put([(b"k", ({}, [], []))])
        results.put("ok")
    except sqlite3.OperationalError as error:
        results.put(str(error))


def test_processes_opening_a_new_cache_at_once_all_get_it(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    for trial in range(8):
        path, results = str(tmp_path / f"cache-{trial}.sqlite"), context.Queue()
        start = time.time() + 0.2
        workers = [context.Process(target=_open_at, args=(path, start, results)) for _ in range(6)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join()
        assert outcomes == ["ok"] * len(workers), f"trial {trial}: {outcomes}"
        assert _entries(Path(path)) == 1
