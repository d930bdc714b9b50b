"""Settings that crawl the generated demo web served on loopback, and a crawl of it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import stages
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.net import free_port

USER_AGENT = "crawlcycle-test/0.1 (+http://127.0.0.1/contact)"


def demo_settings(tmp_path: Path, demo_web: DemoWeb, port: int, **overrides: object) -> Settings:
    values = {
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.01, "max_delay": 1.0, "delay_factor": 0.5, "db_path": str(tmp_path / "crawl.duckdb"),
        "data_dir": str(tmp_path / "data"), "seeds_file": str(demo_web.seeds),
        "query_log_dir": str(demo_web.query_log_dir), "batch_size": 120, "per_host_cap": 20, "shards": 3,
        "start_date": "2026-11-01", "end_date": "2026-11-03", "parse_workers": 1,
    }
    values.update(overrides)
    return load_settings(overrides=values, environ={})


def crawled_settings(folder: Path, demo_web: DemoWeb, port: int) -> Settings:
    """Settings after two cycles whose seeds add a page the demo web lacks and a host nothing listens for."""
    seeds = folder / "seeds.txt"
    seeds.write_text(demo_web.seeds.read_text() + "http://hiking.demo.test/no-such-page.html\nhttp://down.test/\n")
    # a floor of refreshes: a young crawl's stored pages rarely beat its new URLs, and the views read cycle 2's checks;
    # every gate's HTML report, for the page to link
    settings = demo_settings(folder, demo_web, port, seeds_file=str(seeds), refresh_share_min=0.05,
                             gate_reports="always",
                             connect_to=f"down.test=127.0.0.1:{free_port()},*.test=127.0.0.1:{port}")
    stages.init(settings)
    for day in (1, 2):
        stages.run_cycle(settings, date(2026, 11, day), progress=lambda m: None)
    return settings
