"""Before and after a change that can touch the crawl order: hybrid and its strongest rivals at a revision and in
this working tree, on the same runs (``bench/policies.py --compare REV``).

The revision is checked out beside the project (``git worktree``, under ``<work>/compare/<sha>/tree``) with its own
virtual environment installed from its own lock file (kept for the next comparison), and each side runs the
``crawlcycle simulate`` of its own code on the seeds and workload bench/policies.py writes for each run, with the same
settings. Each side computes its own ground truth (the truth is the lab's, and the lab may have changed too). What
is compared is each policy's % of ideal per judge and budget, run by run: a rival that moves says the lab or the
shared stages changed; hybrid moving alone says its ordering did.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from crawlcycle.evaluation.crawl_metrics import BUDGETS, ORACLES
from crawlcycle.evaluation.policy_lab import JUDGES, budget_label, pct_of_ideal

ROOT = Path(__file__).resolve().parents[1]
RIVALS = 2  # the strongest rivals of each snapshot compared beside hybrid
MOVED = 0.01  # a move of hybrid's % of ideal beyond one point is a regression to explain or fix
SHOWN = BUDGETS[-2:]


class CompareError(Exception):
    """A comparison that cannot be run; the message is one line."""


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise CompareError(f"git {' '.join(args)}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return done.stdout.strip()


def revision(rev: str, work: Path) -> tuple[str, Path]:
    """(the full commit of ``rev``, the crawlcycle command of its tree): the tree checked out under ``work`` and its
    virtual environment installed from its lock file, once per commit."""
    sha = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    home = work / "compare" / sha[:12]
    tree, venv = home / "tree", home / "venv"
    command = venv / "bin" / "crawlcycle"
    if command.is_file():
        return sha, command
    shutil.rmtree(home, ignore_errors=True)
    _git("worktree", "prune")
    _git("worktree", "add", "--detach", str(tree), sha)
    print(f"compare: installing {sha[:12]} into {venv} from its requirements-dev.lock", flush=True)
    uv = Path(sys.executable).parent / "uv"
    for step in ([sys.executable, "-m", "venv", str(venv)],
                 [str(uv), "pip", "sync", "--quiet", "--python", str(venv / "bin" / "python"),
                  str(tree / "requirements-dev.lock")],
                 [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "--no-deps", "-e",
                  str(tree)]):
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            raise CompareError(f"installing {sha[:12]}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return sha, command


def strongest_rivals(results: Path, n: int = RIVALS) -> list[str]:
    """The ``n`` policies but hybrid with the highest mean % of ideal (both judges, the two largest budgets) in the
    committed results of a snapshot (``bench/results/<snapshot>/<policy>/run-<r>.json``)."""
    means = {}
    for folder in sorted(p for p in results.glob("*") if p.is_dir()):
        if folder.name == "hybrid" or folder.name in ORACLES.values():
            continue
        values = [v for f in sorted(folder.glob("run-*.json")) for j in JUDGES for b in SHOWN
                  if (v := pct_of_ideal(json.loads(f.read_text()), j, budget_label(b))) is not None]
        if values:
            means[folder.name] = statistics.fmean(values)
    if len(means) < n:
        raise CompareError(f"{results}: results of fewer than {n} rivals to compare (run bench/policies.py first, or "
                           "name the policies with --policies)")
    return sorted(means, key=means.get, reverse=True)[:n]


def simulate(command: Path, folder: Path, warc: Path, queries: Path, seeds: Path, policies: list[str], cycles: int,
             batch: int, user_agent: str, overrides: dict[str, object], jobs: int) -> dict[str, dict]:
    """``policies`` through one side's ``crawlcycle simulate`` in ``folder``: policy -> summary."""
    folder.mkdir(parents=True, exist_ok=True)
    flags = [f"--{key.replace('_', '-')}={value}" for key, value in {"batch_size": batch, **overrides}.items()]
    args = [str(command), "simulate", "--snapshot", str(warc), "--queries", str(queries), "--seeds", str(seeds),
            "--policy", ",".join(policies), "--cycles", str(cycles), "--user-agent", user_agent, *flags,
            "--out", str(folder / "out"), "--jobs", str(jobs), "--cache", str(folder.parent.parent / "cache")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAWLCYCLE_")}
    with (folder / "simulate.log").open("w") as log:
        done = subprocess.run(args, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode:
        tail = (folder / "simulate.log").read_text().strip().splitlines()[-1:] or ["no output"]
        raise CompareError(f"{command} simulate failed in {folder}: {tail[0]}")
    out = folder / "out"
    return {p: json.loads(((out / p) if len(policies) > 1 else out).joinpath("summary.json").read_text())
            for p in policies}


def figures(summaries: dict[str, dict]) -> dict[tuple[str, str, str], float | None]:
    """(policy, judge, budget) -> % of ideal of one run, by the judges that judged it (a revision from before a judge
    joined the panel lacks it)."""
    return {(p, j, budget_label(b)): pct_of_ideal(s, j, budget_label(b))
            for p, s in summaries.items() for j in JUDGES if j in s["budgets_by_judge"] for b in SHOWN}


def report(name: str, label: str, before: list[dict], after: list[dict]) -> list[str]:
    """Lines: per policy, judge and budget, % of ideal at the revision and here, run by run, the mean change and
    its range; a last line per snapshot naming where hybrid moved by more than ``MOVED``."""
    lines = [f"### {name}: {label} → this tree, % of ideal per run (change)", ""]
    moved = []
    shared = set.intersection(*(set(run) for run in [*before, *after]))  # the judges both sides have
    for key in sorted(shared, key=lambda k: (k[0] != "hybrid", k)):
        pairs = [(b[key], a[key]) for b, a in zip(before, after, strict=True)]
        cells = ["—" if x is None or y is None else f"{100 * x:.1f} → {100 * y:.1f} ({100 * (y - x):+.1f})"
                 for x, y in pairs]
        deltas = [y - x for x, y in pairs if x is not None and y is not None]
        mean = (f"mean change {100 * statistics.fmean(deltas):+.1f} [{100 * min(deltas):+.1f}, "
                f"{100 * max(deltas):+.1f}]" if deltas else "not reached")
        lines.append(f"{name} {key[0]} {key[1]} {key[2]}: " + "; ".join(cells) + f"; {mean}")
        if key[0] == "hybrid" and deltas and max(abs(d) for d in deltas) > MOVED:
            moved.append(f"{key[1]} {key[2]}")
    lines += ["", f"{name}: hybrid moved by more than {100 * MOVED:.0f} point in some run at "
                  + ", ".join(moved) if moved else f"{name}: hybrid within {100 * MOVED:.0f} point in every run", ""]
    return lines
