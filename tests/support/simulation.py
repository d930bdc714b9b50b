"""Simulator outputs as the Crawl page reads them, for a made-up fetch order."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from crawlcycle.evaluation.crawl_metrics import curve, summarize
from crawlcycle.evaluation.ground_truth import JUDGES, Truth


def write_simulation(out: Path, policies: list[str], seed: int) -> dict[str, pl.DataFrame]:
    """Simulator outputs for ``policies`` (the simulator's own curve and summary of a made-up fetch order)."""
    # the reference judge values the first pages most, every judge of the panel the last ones
    pages = pl.DataFrame({"url": [f"http://a.test/{i}" for i in range(20)],
                          "impact": [float(20 - i) for i in range(20)],
                          **{Truth.column(j): [float(i) for i in range(20)] for j in JUDGES[1:]},
                          "in_links": list(range(20)), "hot": [i < 2 for i in range(20)]})
    truth = Truth(pages, {"a.test"}, pl.DataFrame(schema={"judge": pl.String, "query": pl.String, "rank": pl.Int64,
                                                          "url": pl.String}))
    curves = {}
    for k, policy in enumerate(policies):
        order = pages.sample(fraction=1.0, shuffle=True, seed=seed + k).select(page="url")
        points = curve(order, truth)
        folder = out / policy if len(policies) > 1 else out
        folder.mkdir(parents=True, exist_ok=True)
        points.write_csv(folder / "curve.csv")
        (folder / "summary.json").write_text(json.dumps({"policy": policy, "budgets": summarize(points, truth)}))
        curves[policy] = points
    if len(policies) > 1:
        (out / "curves.png").write_bytes(b"")
    return curves
