"""The package as `pip install .` leaves it, not editable: built into a wheel from a copy of the sources, installed
into a folder of its own, then `crawlcycle init` and a cycle run from there against the demo web on loopback."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from crawlcycle.db import connect
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import write_toml

ROOT = Path(__file__).resolve().parents[1]
# The top-level modules of the install's extras (lab: plots and the panel of judges; celery: scale-out).
EXTRA_MODULES = ("matplotlib", "bm25s", "tantivy", "celery", "psycopg2", "redis", "asyncpg")


def _python(site: Path, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # PYTHONPATH comes before the editable install's path entry, so the installed copy is the one imported.
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)})


def test_a_non_editable_install_runs_init_and_a_cycle(settings: Settings, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("include", "sql"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # The build uses the locked setuptools of this environment: no package index needed.
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                            str(src), "-w", str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("crawlcycle-*.whl")
    shipped = zipfile.ZipFile(wheel).namelist()
    sources = [f"crawlcycle/{p.relative_to(ROOT).as_posix()}" for p in (ROOT / "sql").rglob("*.sql")]
    packages = {p.parent.relative_to(ROOT / "include").as_posix() for p in (ROOT / "include").rglob("__init__.py")}
    assert {f"{p}/__init__.py" for p in packages} <= set(shipped), "a package missing from the wheel"
    assert sources and set(sources) <= set(shipped), "SQL files missing from the wheel"

    site = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                              "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    shutil.rmtree(src)  # nothing may still read the copied sources
    where = _python(site, "import crawlcycle.db as d; print(d.__file__); print(d.SQL_DIR)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert all(Path(line).is_relative_to(site) for line in where.stdout.split()), where.stdout

    cfg = tmp_path / "crawlcycle.toml"
    write_toml(settings, cfg)
    # a base install: none of the extras' modules can be imported (this environment has them all)
    cli = (f"import sys\nclass NoExtras:\n    def find_spec(self, name, path=None, target=None):\n"
           f"        if name.split('.')[0] in {set(EXTRA_MODULES)!r} or name.startswith('airflow.providers.celery'):\n"
           f"            raise ModuleNotFoundError(f'No module named {{name!r}}', name=name)\n"
           f"sys.meta_path.insert(0, NoExtras())\n"
           f"from crawlcycle.cli import main; sys.exit(main(sys.argv[1:]))")
    init = _python(site, cli, "init", "--config", str(cfg), cwd=tmp_path)
    assert init.returncode == 0 and "seed URLs admitted" in init.stdout, init.stderr
    cycle = _python(site, cli, "cycle", "--date", "2026-11-01", "--config", str(cfg), cwd=tmp_path)
    assert cycle.returncode == 0 and "cycle 1:" in cycle.stdout, cycle.stderr
    # the policy lab needs its extra, and says so in one line
    lab = _python(site, cli, "simulate", "--config", str(cfg), "--snapshot", str(tmp_path / "none.warc.gz"),
                  "--queries", str(tmp_path / "none.tsv"), "--seeds", "1", cwd=tmp_path)
    assert lab.returncode == 2 and lab.stderr.strip().splitlines() == [
        "crawlcycle simulate: needs the lab extra, which is not installed (module bm25s): "
        "pip install 'crawlcycle[lab]'"], lab.stderr
    with connect(settings, read_only=True) as con:
        fetched = con.execute("SELECT count(*) FROM fetch_log WHERE cycle = 1").fetchone()[0]
        next_batch = con.execute("SELECT count(*) FROM batches WHERE fetch_cycle = 2").fetchone()[0]
    assert fetched > 0 and next_batch > 0
