"""The fetcher run against a FaultServer, and what it wrote read back; one host's run, whose parts are the units of
the fetch path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.url_states import FetchOutcome
from crawlcycle.fetch.exchange import Recorder
from crawlcycle.fetch.fetcher import fetch_urls
from crawlcycle.fetch.host_loop import HostLoop
from crawlcycle.fetch.http_client import Client, Resolver, allowed_networks
from crawlcycle.fetch.politeness import Journal
from crawlcycle.fetch.warc_output import warc_output
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT
from tests.support.faultserver import FaultServer


def settings_for(server: FaultServer, **overrides: object) -> Settings:
    base = {"user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{server.port}", "allow_networks": "127.0.0.0/8",
            "min_delay": 0.1, "max_delay": 1.0, "delay_factor": 1.0, "connect_timeout": 0.5,
            "read_timeout": 0.3, "total_deadline": 0.8, "max_body_bytes": 50_000, "robots_max_bytes": 10_000,
            "fetch_time_limit": 20.0, "fetch_concurrency": 8, "sitemap_fallback": False}
    return load_settings(overrides=base | overrides, environ={})


def run(urls: list[str], settings: Settings, out: Path, state: dict | None = None, **kwargs: object):
    """Fetch, then read back (log by URL, requests, and the stored state: hosts by name, robots and tries by
    origin)."""
    state = state or {}
    result = fetch_urls(urls, settings, out, hosts=list(state.get("hosts", {}).values()),
                        robots=list(state.get("robots", {}).values()), **kwargs)
    log = pq.read_table(result.fetch_log)
    assert log.schema.equals(shard_files.FETCH_OUTPUTS[shard_files.FETCH_LOG])
    rows = log.to_pylist()
    assert [r["url"] for r in rows] == list(dict.fromkeys(urls))  # one row per input URL, in order
    assert all(r["outcome"] in list(FetchOutcome) for r in rows)
    requests = pq.read_table(result.requests).to_pylist()
    stored = {"hosts": {r["host"]: r for r in pq.read_table(result.hosts).to_pylist()},
              "robots": {r["origin"]: r for r in pq.read_table(out / shard_files.ROBOTS).to_pylist()},
              "tries": {r["origin"]: r for r in pq.read_table(out / shard_files.ORIGIN_TRIES).to_pylist()}}
    return {r["url"]: r for r in rows}, requests, stored


def gaps(requests: list[dict], host: str) -> list[float]:
    """Idle time between consecutive requests to ``host``: next start minus previous finish."""
    reqs = sorted((r for r in requests if r["host"] == host), key=lambda r: r["started_at"])
    for a, b in zip(reqs, reqs[1:], strict=False):
        assert b["started_at"] >= a["finished_at"], "two requests in flight to one host"
    return [b["started_at"] - a["finished_at"] for a, b in zip(reqs, reqs[1:], strict=False)]


@contextmanager
def host_loop(settings: Settings, host: str, out: Path, stored: dict | None = None,
              stored_robots: dict[str, dict] | None = None, not_before: float | None = None) -> Iterator[HostLoop]:
    """The run of ``host`` as ``fetch_urls`` builds it, its WARC and journal in ``out``; its parts (``requests``,
    ``backoff``, ``robots``, ``sitemaps``) work on their own. The time limit counts from here."""
    out.mkdir(parents=True, exist_ok=True)
    journal = Journal(out / shard_files.POLITENESS_JOURNAL)
    try:
        with warc_output(out / shard_files.WARC, settings) as warc:
            loop = HostLoop(host, settings, Client(settings, Resolver(settings), allowed_networks(settings)),
                            Recorder(warc, journal), time.time() + settings.fetch_time_limit, stored or {},
                            stored_robots or {}, not_before)
            try:
                yield loop
            finally:
                loop.requests.close()
    finally:
        journal.close()
