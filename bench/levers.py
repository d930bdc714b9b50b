"""Levers that could make hybrid hold under every engine of the panel: each one on against off, paired, run by run.

``bench/levers.py --lever NAME`` runs hybrid with the lever on the runs of ``bench/policies.py`` (the same seeds and
workloads, written into ``--work/<snapshot>/run-<r>``) and reads it against the results committed in bench/results
by a run of bench/policies.py with the same code: hybrid there is the lever off, and its rivals are held fixed. It
writes ``bench/results/levers/<lever>.md`` and prints, per judge and budget, hybrid's mean % of ideal off and on, the
paired difference per run (mean, min–max), the ratio of the means to the strongest rival held fixed off and on, and
the panel minimum off and on. A lever that changes the reference ranker changes the reference judge too: that judge
is left out of its table (its rivals were judged by the other reference ranker).

Levers (``LEVERS``):

- ``none``: the control, hybrid as committed run again (every difference must be 0, or the lab is not the one that
  wrote bench/results);
- ``stemmed-ranker``: the reference ranker stems (``ranker_stemmer = english``), as most engines of the panel do;
- ``prestige``: hybrid leans more on ranker-free prestige (``hybrid_prestige_weight`` 0.3 instead of 0.1);
- ``engine-log``: the crawl reads a results log, the ``tantivy`` judge's top K of every query over the whole
  snapshot (a site-search engine that has indexed the user's own sites), and its lists decide the impact of the
  pages it shows (:mod:`crawlcycle.ranking.engine_results`).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import polars as pl
import policies

from crawlcycle.evaluation import policy_lab
from crawlcycle.evaluation.crawl_metrics import BUDGETS
from crawlcycle.evaluation.ground_truth import ground_truth
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.settings.sources import load_settings

LEVERS: dict[str, dict[str, Any]] = {
    "none": {},  # the control: hybrid as committed, run again; every difference must be 0
    "stemmed-ranker": {"ranker_stemmer": "english"},
    "prestige": {"hybrid_prestige_weight": 0.3},
    "engine-log": {},  # results_log_dir: written for each run by engine_log
}
ENGINE_JUDGE = "tantivy"
REFERENCE_SETTINGS = {"ranker_stemmer", "ranker_stopwords", "ranker_field_words", "bm25_weights", "bm25_b",
                      "bm25_k1", "prestige_weight", "top_k", "extractor"}
CACHE = policies.ROOT / "data" / "simulation-cache"  # the ground truths bench/policies.py keeps


def engine_log(settings_overrides: dict[str, Any], snap: policies.Snapshot, queries: Path, folder: Path) -> Path:
    """A results log of one partition (the crawl's start date): the engine judge's top K of every workload query
    over the whole snapshot, read from the run's ground truth."""
    settings = load_settings(environ={}, overrides=settings_overrides)
    truth, _ = ground_truth(settings, [snap.warc], queries, CACHE)
    day = folder / f"dt={settings.start_date}"
    day.mkdir(parents=True, exist_ok=True)
    (truth.top_k.filter(pl.col("judge") == ENGINE_JUDGE).select("query", "rank", "url")
     .write_csv(day / "engine.tsv", separator="\t", include_header=False))
    return folder


def run_lever(lever: str, name: str, runs: int, work: Path) -> list[dict]:
    """Hybrid's summary of each run of snapshot ``name`` with ``lever`` on; a run whose summary ``work`` keeps is not
    run again."""
    snap = policies.real_snapshot(name, 3000)
    pages = policy_lab.html_pages(snap.warc)
    out = []
    for r in range(runs):
        folder = work / name / f"run-{r}"
        if (kept := folder / lever / "summary.json").is_file():
            out.append(json.loads(kept.read_text()))
            continue
        seeds, queries = policies.run_inputs(folder, snap, pages, r)
        base = {"user_agent": policies.USER_AGENT, "batch_size": snap.batch}
        overrides = {**base, **LEVERS[lever]}
        if lever == "engine-log":
            overrides["results_log_dir"] = str(engine_log(base, snap, queries, folder / lever / "results-log"))
        settings = load_settings(environ={}, overrides=overrides)
        summaries = simulate(settings, [snap.warc], queries, seeds, ["hybrid"], snap.cycles, folder / lever / "sim",
                             progress=lambda m, r=r: print(f"  [{lever} {name} run {r}] {m}", flush=True)
                             if "cycle" in m and "done" in m else None, cache=CACHE)
        kept.write_text(json.dumps(summaries["hybrid"]))
        out.append(summaries["hybrid"])
    return out


def report(lever: str, on: dict[str, list[dict]]) -> list[str]:
    """The lever's table: off (committed hybrid) against on, per judge and budget, pooled over the snapshots."""
    off_runs = [run for name in on for run in policies.committed_runs(name)[:len(on[name])]]
    on_runs = [{**run, "hybrid": on[name][r]} for name in on
               for r, run in enumerate(policies.committed_runs(name)[:len(on[name])])]
    judges = [j for j in policy_lab.judged_by(off_runs)
              if not (j == "reference" and REFERENCE_SETTINGS & set(LEVERS[lever]))]
    held = {side: {(f["judge"], f["budget"]): f for f in policy_lab.held_fixed_figures(runs)}
            for side, runs in (("off", off_runs), ("on", on_runs))}
    lines = [f"### Lever `{lever}`: {LEVERS[lever] or 'results log of the ' + ENGINE_JUDGE + ' judge'}, "
             f"{len(on_runs)} runs of {', '.join(on)}", "",
             "hybrid's mean % of ideal with the lever off (bench/results) and on, the paired difference of the runs "
             "(on − off, mean and min–max, in points), and the ratio of the means to the strongest rival held fixed.",
             "", "| judge | budget | off | on | paired difference | ratio off | ratio on |", "|---" * 7 + "|"]
    lowest: dict[str, dict[str, float]] = {"off": {}, "on": {}}
    for j in judges:
        for b in map(policy_lab.budget_label, BUDGETS[-2:]):
            pairs = [(policy_lab.pct_of_ideal(a["hybrid"], j, b), policy_lab.pct_of_ideal(c["hybrid"], j, b))
                     for a, c in zip(off_runs, on_runs, strict=True)]
            pairs = [(a, c) for a, c in pairs if a is not None and c is not None]
            if not pairs or (j, b) not in held["off"] or (j, b) not in held["on"]:
                continue
            diffs = [100 * (c - a) for a, c in pairs]
            ratio = {side: held[side][(j, b)] for side in held}
            for side in lowest:
                lowest[side][b] = min(lowest[side].get(b, float("inf")), ratio[side]["ratio"])
            lines.append(f"| {j} | {b} | {100 * statistics.fmean(a for a, _ in pairs):.1f} | "
                         f"{100 * statistics.fmean(c for _, c in pairs):.1f} | {statistics.fmean(diffs):+.1f} "
                         f"({min(diffs):+.1f} to {max(diffs):+.1f}) | {ratio['off']['ratio']:.3f} "
                         f"({ratio['off']['rival']}) | {ratio['on']['ratio']:.3f} ({ratio['on']['rival']}) |")
    for b in lowest["off"]:
        lines.append(f"| **panel minimum** | {b} | | | | **{lowest['off'][b]:.3f}** | **{lowest['on'][b]:.3f}** |")
    return [*lines, ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lever", required=True, choices=sorted(LEVERS))
    ap.add_argument("--runs", type=int, default=3, help="runs per snapshot (as many as bench/results holds)")
    ap.add_argument("--only", choices=policies.REAL, help="one snapshot")
    ap.add_argument("--work", type=Path, default=policies.ROOT / "data" / "bench-levers")
    args = ap.parse_args()
    names = [n for n in policies.REAL if args.only in (None, n)]
    if missing := [n for n in names if len(policies.committed_runs(n)) < args.runs]:
        raise SystemExit(f"bench/results holds fewer than {args.runs} runs of {', '.join(missing)}: run "
                         f"bench/policies.py --runs {args.runs} first")
    on = {name: run_lever(args.lever, name, args.runs, args.work) for name in names}
    lines = report(args.lever, on)
    out = policies.RESULTS / "levers" / f"{args.lever}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
