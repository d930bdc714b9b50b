"""What the processes that fork Airflow's tasks import first (``crawlcycle.airflow.preload``) covers what the stages
import on first use: a real crawl of the demo web in a fresh interpreter that imported ``PRELOAD`` first imports no
other scikit-learn, SciPy or Great Expectations module in any stage of two cycles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.settings.sources import write_toml
from tests.support.demo import demo_settings

CRAWL = """
import json, sys
from datetime import date
from crawlcycle.airflow.preload import preload
from crawlcycle.pipeline import stages
from crawlcycle.settings.sources import load_settings
from crawlcycle.db import connect

preload()
before = set(sys.modules)
settings = load_settings(config=sys.argv[1], environ={})
stages.init(settings)
for day in (1, 2):
    stages.run_cycle(settings, date(2026, 11, day), progress=lambda m: None)
with connect(settings, read_only=True) as con:
    models = sorted({m for (m,) in con.execute("SELECT model FROM model_runs").fetchall()})
late = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ("sklearn", "scipy", "great_expectations"))
print(json.dumps({"models": models, "late": late}))
"""


def test_the_preloaded_modules_hold_every_fit_import(tmp_path: Path, demo_web: DemoWeb, demo_server: int) -> None:
    write_toml(demo_settings(tmp_path, demo_web, demo_server), tmp_path / "settings.toml")
    out = subprocess.run([sys.executable, "-c", CRAWL, str(tmp_path / "settings.toml")], capture_output=True,
                         text=True, timeout=600, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.splitlines()[-1])
    # the fits that import scikit-learn ran: S', the top-K odds with it, the prestige and improvability regressions
    assert {"s_prime", "prestige", "improvability"} <= set(found["models"]), found["models"]
    assert found["late"] == []
