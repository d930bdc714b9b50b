"""Shared fixtures: a generated demo web served on loopback, settings pointing at it, a misbehaving server,
the shared data folder next to the project, and an isolated Airflow home (set before anything imports Airflow,
which reads its configuration at import)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlcycle.airflow.environment import airflow_env

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="crawlcycle-airflow-"))
os.environ.update(airflow_env(_AIRFLOW_HOME))
os.environ.pop("CRAWLCYCLE_CONFIG", None)
for _key in [k for k in os.environ if k.startswith("CRAWLCYCLE_")]:
    del os.environ[_key]

from crawlcycle.devtools.demo_web import DemoWeb, generate  # noqa: E402
from crawlcycle.devtools.warc_server import serve  # noqa: E402
from crawlcycle.settings import Settings  # noqa: E402
from tests.support.built_once import built_once  # noqa: E402
from tests.support.demo import demo_settings  # noqa: E402
from tests.support.faultserver import FaultServer  # noqa: E402

# Real corpora, queries and conformance cases, kept next to the project rather than in it.
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the shared data must sit next to the project (../shared)", pytrace=False)
    return SHARED


@pytest.fixture(scope="session")
def dev_docs(shared: Path) -> Path:
    """The real documentation web snapshot."""
    return shared / "corpus" / "dev-docs.warc.gz"


@pytest.fixture(scope="session")
def three_sites(tmp_path_factory: pytest.TempPathFactory, shared: Path, dev_docs: Path) -> dict[str, Path]:
    """Three real sites cut from the dev-docs snapshot (sphinx, nodejs, requests), their home pages as seeds and a
    workload of real query texts (bench/policies.py's kind: a seeded Zipf draw): warc, seeds, queries; and cache,
    the simulator's cache every crawl of them shares, holding their ground truth and their parsed pages (computed
    here once: crawls that differ in ordering settings share them)."""
    def build(d: Path) -> None:
        from crawlcycle.evaluation import policy_lab
        from crawlcycle.evaluation.ground_truth import ground_truth
        from tests.support.snapshot_cut import cut
        from tests.support.three_sites import three_site_settings

        warc = cut(dev_docs, tuple(f"http://{site}.docs.test/" for site in ("sphinx", "nodejs", "requests")),
                   d / "sites.warc.gz")
        (d / "seeds.txt").write_text("".join(u + "\n" for u in policy_lab.seed_set(policy_lab.html_pages(warc), 0,
                                                                                   "/index.html")))
        q = shared / "queries"
        texts = (q / "csn_queries.csv").read_text().splitlines()[1:] + [
            line.split("\t", 1)[1] for line in (q / "staqc_sql_titles.tsv").read_text().splitlines()]
        (d / "queries.tsv").write_text("".join(f"{t}\t{f}\n" for t, f in policy_lab.zipf_workload(
            texts, 3000, policy_lab.WORKLOAD_SEED)))
        (d / "cache").mkdir()
        # as the simulator computes it for every crawl of them
        ground_truth(three_site_settings(parse_cache=str(d / "cache" / "parse.sqlite")), [warc], d / "queries.tsv",
                     d / "cache")

    d = built_once(tmp_path_factory, "three-sites", build)
    return {"warc": d / "sites.warc.gz", "seeds": d / "seeds.txt", "queries": d / "queries.tsv", "cache": d / "cache"}


@pytest.fixture(scope="session")
def three_site_crawl(tmp_path_factory: pytest.TempPathFactory, three_sites: dict[str, Path]) -> Path:
    """The crawl database of four hybrid cycles of 40 pages over the three sites, every other setting at its
    default: the crawl the tests of the ordering stages compare their variations with."""
    from tests.support.three_sites import THREE_SITE_CYCLES, simulate_three_sites

    def build(out: Path) -> None:
        simulate_three_sites(three_sites, out, THREE_SITE_CYCLES)

    return built_once(tmp_path_factory, "three-site-crawl", build) / "work" / "crawl.duckdb"


@pytest.fixture(scope="session")
def demo_web(tmp_path_factory: pytest.TempPathFactory) -> DemoWeb:
    return generate(tmp_path_factory.mktemp("demo-web"), hosts=8, pages=240, seed=11, days=3)


@pytest.fixture(scope="session")
def demo_server(demo_web: DemoWeb) -> Iterator[int]:
    import json

    with serve([demo_web.warc], behaviour=json.loads(demo_web.behaviour.read_text())) as handle:
        yield handle.port


@pytest.fixture
def settings(tmp_path: Path, demo_web: DemoWeb, demo_server: int) -> Settings:
    return demo_settings(tmp_path, demo_web, demo_server)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    """A misbehaving HTTP server on loopback; its routes are the test's to script."""
    s = FaultServer()
    yield s
    s.close()


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """A migrated Airflow metadata DB (SQLite) in this session's Airflow home."""
    exe = Path(sys.executable).with_name("airflow")
    subprocess.run([str(exe), "db", "migrate"], check=True, capture_output=True, env=os.environ.copy())
    return _AIRFLOW_HOME
