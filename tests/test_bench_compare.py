"""bench/policies.py --compare REV: the policies at a revision (its own tree and virtual environment) and in this
tree on the same runs. Against HEAD on a clean checkout the two sides are one build: every figure is unchanged."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlcycle.evaluation.ground_truth import JUDGES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """The bench's work folder; the worktree the compare checks out there is unregistered from this repository after
    the test (git would list it, pruneable, once pytest removed the folder)."""
    yield tmp_path
    for tree in (tmp_path / "compare").glob("*/tree"):
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)


def test_compare_against_head_runs_both_sides_on_the_same_runs_and_finds_no_change(work: Path) -> None:
    done = subprocess.run([sys.executable, "bench/policies.py", "--only", "generated", "--pages", "480", "--runs", "1",
                           "--cycles", "2", "--policies", "hybrid,bfs", "--compare", "HEAD", "--work", str(work)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert (work / "compare" / head[:12] / "venv" / "bin" / "crawlcycle").is_file()
    run = work / "compare" / "generated" / "run-0"
    for side in ("before", "after"):  # each side its own simulate, on the one run's seeds and workload
        assert (run / side / "out" / "hybrid" / "summary.json").is_file()
    lines = [line for line in done.stdout.splitlines() if line.startswith("generated ")]
    rows = {tuple(line.split(":")[0].split()[1:]): line for line in lines if line.count(":") == 1}
    assert set(rows) == {(p, j, b) for p in ("hybrid", "bfs") for j in JUDGES for b in ("5%", "10%")}
    assert all("(+0.0)" in row and "mean change +0.0" in row for row in rows.values()), "\n".join(rows.values())
    assert "generated: hybrid within 1 point in every run" in done.stdout
    bad = subprocess.run([sys.executable, "bench/policies.py", "--only", "generated", "--compare", "no-such-rev",
                          "--work", str(work)], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines()[-1].startswith("--compare: git rev-parse")
