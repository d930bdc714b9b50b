"""The hybrid mix learnt from what the crawl fetched: how much the query part, the prestige part and the discovery
part of hybrid's priority each said about the impact the fetched pages carry.

Each refit takes every new URL fetched so far with the parts its score had when its batch was chosen
(``sql/models/mix/fetched_parts.sql``: each part scaled to [0, 1] as the priority mixed them) and the impact the page
carries in the crawl's index now (``prestige.observed_impact``). A part's weight is its rank correlation (Spearman)
with that impact, 0 where it is negative, the weights scaled to sum to 1 (``fitted``; none while no part correlates):
a smooth reading, where a least-squares fit of the parts jumps from one corner to another as pages come in. The fit
is shrunk towards ``PRIOR`` by the number n of fetched pages that had query evidence (a query part above 0):
w = (n x fitted + ``SHRINK`` x PRIOR) / (n + SHRINK). The prior trusts link prestige, the evidence a crawl has before
its query evidence builds up. Each fit goes to ``model_runs`` (model ``hybrid_mix``: the correlations, the fitted and
the shrunk weights); with ``hybrid_mix = learnt``, hybrid mixes its parts by the newest fit's weights (the prior until
one exists), and ``v_batch_explain`` shows the weights each batch URL was scored with.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import query
from crawlcycle.models.prestige import observed_impact
from crawlcycle.models.refit import latest_metrics, record_model
from crawlcycle.settings import Settings

PARTS = ("query", "prestige", "discovery")
PRIOR = {"query": 0.2, "prestige": 0.8, "discovery": 0.0}
SHRINK = 50  # fetched pages with query evidence that weigh as much as the prior


def fit(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict:
    """Fit the mix on the new URLs fetched up to cycle ``cycle`` and record it."""
    parts = query(con, "models/mix/fetched_parts", cycle=cycle)
    impact, source = observed_impact(con, settings, cycle)
    data = parts.join(impact.select("url", "impact"), on="url")
    correlations, fitted, shrunk = learn(data)
    metrics: dict = {"pages": data.height, "pages_with_query_evidence": int((data["query_part"] > 0).sum()),
                     "impact_source": source, "prior": PRIOR, "shrink": SHRINK, "correlations": correlations,
                     "fitted": fitted, "weights": shrunk}
    record_model(con, cycle, "hybrid_mix", [f"{p}_part" for p in PARTS], metrics)
    return metrics


def learn(data: pl.DataFrame) -> tuple[dict[str, float], dict[str, float] | None, dict[str, float]]:
    """From fetched pages' parts (``<part>_part``) and the impact they carry: each part's rank correlation with the
    impact (0 for a constant part), the weights they give (the positive ones scaled to sum to 1; None when none is
    positive), and those weights shrunk towards ``PRIOR``."""
    correlations = {}
    for p in PARTS:
        rho = data.select(pl.corr(f"{p}_part", "impact", method="spearman")).item() if data.height > 1 else None
        correlations[p] = round(rho, 9) if rho is not None and np.isfinite(rho) else 0.0
    total = sum(max(rho, 0.0) for rho in correlations.values())
    fitted = {p: round(max(rho, 0.0) / total, 9) for p, rho in correlations.items()} if total > 0 else None
    evidence = int((data["query_part"] > 0).sum()) if fitted else 0
    trust = evidence / (evidence + SHRINK)
    return correlations, fitted, {p: round(trust * (fitted or PRIOR)[p] + (1 - trust) * PRIOR[p], 9) for p in PARTS}


def weights(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, float]:
    """The weights hybrid mixes its parts by in cycle ``cycle``: the settings' (``hybrid_mix = fixed``), or the
    newest learnt mix up to ``cycle`` (the prior before the first)."""
    if settings.hybrid_mix == "fixed":
        return {"query": settings.hybrid_query_weight, "prestige": settings.hybrid_prestige_weight,
                "discovery": settings.hybrid_discovery_weight}
    learnt = latest_metrics(con, "hybrid_mix", cycle, "weights")
    return learnt["weights"] if learnt else PRIOR
