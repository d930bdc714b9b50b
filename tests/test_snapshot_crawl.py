"""Crawl the real documentation web of ../shared/corpus/dev-docs.warc.gz through the same WARC server."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from crawlcycle.db import connect
from crawlcycle.devtools.warc_server import serve
from crawlcycle.pipeline import stages
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT


@pytest.fixture(scope="module")
def docs_port(dev_docs: Path) -> int:
    with serve([dev_docs]) as handle:
        yield handle.port


def test_two_cycles_over_the_real_documentation_web(tmp_path: Path, docs_port: int) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://django.docs.test/contents.html\nhttp://sphinx.docs.test/contents.html\n")
    (tmp_path / "queries").mkdir()  # no partition: a crawl without queries
    settings = load_settings(environ={}, overrides={
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{docs_port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.01, "max_delay": 0.5, "db_path": str(tmp_path / "crawl.duckdb"),
        "data_dir": str(tmp_path / "data"), "seeds_file": str(seeds), "query_log_dir": str(tmp_path / "queries"),
        "batch_size": 80, "per_host_cap": 40, "shards": 2, "parse_workers": 1, "policy": "indegree"})
    stages.init(settings)
    for day in (1, 2):
        stages.run_cycle(settings, date(2026, 11, day), progress=lambda m: None)
    with connect(settings, read_only=True) as con:
        def q(sql: str) -> list[tuple]:
            return con.execute(sql).fetchall()

        assert q("SELECT count(*) FROM pages WHERE host = 'django.docs.test' AND length(text) > 200")[0][0] > 20
        # Real cross-host links (django -> python) reach the frontier with their anchor texts.
        assert q("SELECT count(*) FROM links WHERE src LIKE 'http://django%' AND dst LIKE 'http://python%'")[0][0] > 0
        assert q("SELECT count(*) FROM frontier WHERE host = 'python.docs.test'")[0][0] > 0
        # django's robots.txt disallows /genindex: such URLs are known but never fetched.
        assert q("SELECT count(*) FROM frontier WHERE url LIKE 'http://django.docs.test/genindex%'")[0][0] > 0
        assert q("SELECT count(*) FROM fetch_log WHERE url LIKE 'http://django.docs.test/genindex%' "
                 "AND outcome <> 'disallowed'")[0][0] == 0
        assert q("SELECT bool_and(success) FROM dq_results") == [(True,)]
        # Links the parser refused reach the database with their reason (sphinx links its source tarball).
        assert q("SELECT count(*) FROM url_rejects WHERE reason = 'binary_extension' AND url LIKE '%.tar.gz'")[0][0] > 0
