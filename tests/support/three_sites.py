"""Hybrid crawls of the three sites cut from ../shared/corpus (conftest's ``three_sites``), as the tests of the
ordering stages run them: 40 pages a cycle, one shard, the sites' shared simulator cache."""

from __future__ import annotations

from pathlib import Path

from crawlcycle.evaluation.simulator import simulate
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT

THREE_SITE_CYCLES = 4


def three_site_settings(**overrides: object) -> Settings:
    """The settings these crawls run with, and ``overrides``."""
    return load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": 40, "shards": 1, **overrides})


def simulate_three_sites(three_sites: dict[str, Path], out: Path, cycles: int, **overrides: object) -> Path:
    """``cycles`` hybrid cycles over the three sites into ``out`` with ``overrides`` to the settings; the crawl
    database."""
    simulate(three_site_settings(**overrides), [three_sites["warc"]], three_sites["queries"], three_sites["seeds"],
             ["hybrid"], cycles, out, progress=lambda m: None, cache=three_sites["cache"])
    return out / "work" / "crawl.duckdb"
