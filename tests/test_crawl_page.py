"""The Crawl page inside a real Airflow (``airflow standalone``) seen by headless Chromium: the page needs a
login, shows up in the UI's navigation, and its numbers are the crawl database's. Screenshots go to
``test-output/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import requests

from crawlcycle.db import connect
from crawlcycle.devtools.airflow_stack import ADMIN, AirflowStack
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.settings.sources import write_toml
from tests.support.demo import crawled_settings
from tests.support.net import free_port
from tests.support.simulation import write_simulation

pytestmark = [pytest.mark.airflow, pytest.mark.browser]

OUTPUT = Path(__file__).resolve().parents[1] / "test-output"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _texts(frame, table: str, col: str) -> list[str]:  # noqa: ANN001 - a Playwright FrameLocator
    return frame.locator(f'table#{table} td[data-col="{col}"]').all_inner_texts()


def test_crawl_page_in_the_airflow_ui(demo_web: DemoWeb, demo_server: int, tmp_path: Path) -> None:
    if not Path(CHROMIUM).is_file():
        # .ci/run installs it: under CI a missing browser is a failure, not a skip
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    settings = crawled_settings(tmp_path, demo_web, demo_server)
    write_simulation(Path(settings.data_dir) / "simulations" / "run", ["bfs", "hybrid"], seed=3)
    write_toml(settings, tmp_path / "settings.toml")
    with connect(settings, read_only=True) as con:
        cycles = con.execute("SELECT cycle, fetched, errors, new_urls FROM cycles ORDER BY cycle").fetchall()
        batch = con.execute("SELECT url, priority FROM batches WHERE fetch_cycle = 3 ORDER BY rank").fetchall()
        errors = con.execute("SELECT count(*) FROM fetch_log WHERE cycle = 2 AND error_class IS NOT NULL").fetchall()
    stack = AirflowStack(tmp_path / "airflow", port=free_port(), config=tmp_path / "settings.toml",
                         log=lambda m: None)
    stack.setup()
    OUTPUT.mkdir(exist_ok=True)
    with stack:
        stack.start()
        page_url = f"{stack.url}/crawl/"
        # Without a login: an API client gets 401, a browser is sent to the login page.
        assert requests.get(page_url, timeout=10).status_code == 401
        r = requests.get(page_url, headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
        assert r.status_code == 303 and "/auth/login" in r.headers["location"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(page_url)
                page.fill("input[name=username]", ADMIN[0])
                page.fill("input[name=password]", ADMIN[1])
                page.click("button[type=submit]")
                page.wait_for_url(page_url, timeout=30_000)  # back on the page after the login
                assert page.locator("table#cycles").is_visible()
                page.screenshot(path=OUTPUT / "crawl-page-full.png", full_page=True)
                # A gate's HTML report, linked from the gate table, is served to the logged-in browser.
                page.locator('table#gates td[data-col="report"] a').first.click()
                page.wait_for_url("**/crawl/gates/1/fetch/index.html", timeout=30_000)
                assert "validations/" in page.content()  # GX's index of the gate's validation
                page.goto(page_url)
                # In the UI: the navigation's "Crawl" entry opens the page in a frame.
                page.goto(stack.url)
                page.get_by_role("link", name="Crawl").click()
                page.wait_for_url("**/plugin/crawl", timeout=30_000)
                frame = page.frame_locator("iframe")
                frame.locator("table#cycles").wait_for(timeout=30_000)
                assert _texts(frame, "cycles", "cycle") == [str(c[0]) for c in cycles]
                assert _texts(frame, "cycles", "fetched") == [str(c[1]) for c in cycles]
                assert _texts(frame, "cycles", "errors") == [str(c[2]) for c in cycles]
                assert _texts(frame, "cycles", "new_urls") == [str(c[3]) for c in cycles]
                assert _texts(frame, "engagement", "cycle") == [str(c[0]) for c in cycles]
                assert frame.locator('[data-card="errors"] b').inner_text() == str(errors[0][0])
                assert _texts(frame, "batch", "url") == [b[0] for b in batch]
                shown = [float(v) for v in _texts(frame, "batch", "priority")]
                assert shown == pytest.approx([b[1] for b in batch], rel=1e-3)
                for plot in ("plot-cycles", "plot-fits", "plot-curves"):
                    assert frame.locator(f"#{plot} svg").count() == 1, plot
                page.screenshot(path=OUTPUT / "crawl-page.png")
            finally:
                browser.close()
