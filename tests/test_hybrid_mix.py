"""The hybrid mix learnt from what the crawl fetched: the weights that fit the impact the fetched pages carry, shrunk
towards a prior that trusts link prestige while query evidence is thin; and a real crawl mixing by them."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from crawlcycle.models.mix import PRIOR, SHRINK, learn
from tests.support.three_sites import simulate_three_sites


def _pages(n: int, impact: callable) -> pl.DataFrame:
    rng = np.random.default_rng(3)
    parts = {f"{p}_part": rng.uniform(0, 1, n) for p in ("query", "prestige", "discovery")}
    return pl.DataFrame({**parts, "impact": impact(parts)})


def test_the_part_that_ranks_the_impact_takes_the_weight_as_evidence_grows() -> None:
    correlations, fitted, shrunk = learn(_pages(400, lambda p: 7 * p["prestige_part"] + 2))
    assert correlations["prestige"] == pytest.approx(1.0) and abs(correlations["query"]) < 0.15
    assert fitted["prestige"] > 0.85 and sum(fitted.values()) == pytest.approx(1.0)
    trust = 400 / (400 + SHRINK)  # every page had query evidence
    assert shrunk["prestige"] == pytest.approx(trust * fitted["prestige"] + (1 - trust) * PRIOR["prestige"])
    # impact ranked by the query part, against the prestige part: the query part takes (nearly) all of it
    correlations, fitted, shrunk = learn(_pages(400, lambda p: p["query_part"] ** 3 - 0.2 * p["prestige_part"]))
    assert correlations["prestige"] < 0 and fitted["prestige"] == 0 and fitted["query"] > 0.85
    assert shrunk["query"] > PRIOR["query"] and shrunk["prestige"] < PRIOR["prestige"]


def test_without_evidence_the_mix_is_the_prior() -> None:
    assert learn(_pages(0, lambda p: p["query_part"]))[2] == PRIOR
    assert learn(_pages(30, lambda p: 0 * p["query_part"]))[1:] == (None, PRIOR)  # no fetched page carries impact
    few = _pages(30, lambda p: p["query_part"]).with_columns(query_part=pl.Series([0.0] * 29 + [1.0]))
    _, fitted, shrunk = learn(few)  # one page with query evidence: its fit barely moves the prior
    assert fitted and abs(shrunk["query"] - PRIOR["query"]) <= 1 / (1 + SHRINK)


def test_a_crawl_mixes_its_parts_by_the_weights_each_refit_learnt(three_sites: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    db = simulate_three_sites(three_sites, tmp_path, 3, hybrid_mix="learnt")
    with duckdb.connect(str(db), read_only=True) as con:
        fits = {c: json.loads(m) for c, m in con.execute(
            "SELECT cycle, metrics FROM model_runs WHERE model = 'hybrid_mix' ORDER BY cycle").fetchall()}
        shown = con.execute("SELECT DISTINCT score_cycle, query_weight, prestige_weight, discovery_weight "
                            "FROM v_batch_explain WHERE kind = 'new' ORDER BY score_cycle").fetchall()
    assert sorted(fits) == [1, 2, 3]
    assert fits[1]["weights"] == PRIOR  # the seeds were scored by nobody: nothing to learn from yet
    assert fits[2]["pages_with_query_evidence"] > 0 and fits[2]["weights"] != PRIOR
    # every batch URL was scored with its cycle's learnt weights; those init scored the seeds' links with, the prior's
    mixes = {0: PRIOR, **{c: fit["weights"] for c, fit in fits.items()}}
    assert shown == [(c, *(mixes[c][k] for k in ("query", "prestige", "discovery"))) for c in (0, 1, 2, 3)]
