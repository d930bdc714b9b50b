"""Impact-weighted random walks over the link graph (Tran et al.): policies ``rw`` and ``rw_eg``.

A walker on the graph of every known URL (crawled pages and frontier) steps from page i along one of its out-links
with probability damping x F_i / outdeg(i), and otherwise restarts at a page chosen uniformly. The impact factor
F_i = (I_i / max I) x (d_i / max d)^gamma lets pages that searchers saw pass on more: I_i is the observed impact of
a crawled page (as the prestige regression reads it, ``sql/models/prestige/observed_impact.sql``) plus epsilon, so
that pages without impact still pass on a little; frontier pages have epsilon alone; d_i is the out-degree. What a
step does not pass on is lost, so the walk converges to (1 - damping)(I - damping P)^-1 v with v uniform; power
iteration reaches it to a tolerance (iterations and residual go to ``model_runs``).

``rw_eg`` enriches the graph with virtual edges between co-cited pages: i and j are joined when some page
links to both, with weight the number of such pages. A step then goes along real links with share omega and
along virtual ones, in proportion to their weights, with share 1 - omega; the virtual impact factor F'_i takes
the summed weight of i's virtual edges as its degree.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np
import polars as pl
import scipy.sparse as sp

from crawlcycle.db import run_sql, staged
from crawlcycle.models.graph import known_graph, power_iteration
from crawlcycle.models.prestige import observed_impact
from crawlcycle.models.refit import record_model
from crawlcycle.settings import Settings

TOL = 1e-10
MAX_ITER = 500


def impact_factor(impact: np.ndarray, degree: np.ndarray, gamma: float) -> np.ndarray:
    """F = (I / max I) x (degree / max degree)^gamma (0^0 = 1)."""
    top = degree.max(initial=0)
    return impact / impact.max(initial=0.0) * (degree / max(top, 1)) ** gamma


def walk_step(src: np.ndarray, dst: np.ndarray, n: int, impact: np.ndarray, gamma: float,
              omega: float | None) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
    """x -> P x, with P[j, i] the weight of a step i -> j, and the total weight of the virtual edges (omega None:
    real links only, weight 0). Co-citation weights W = A^T A (diagonal left out) are never formed: a page with
    k out-links co-cites k^2 pairs, so W x is taken as A^T (A x) - in-degree * x."""
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    back = a.T.tocsr()
    out_deg = np.bincount(src, minlength=n)
    real = impact_factor(impact, out_deg, gamma) / np.maximum(out_deg, 1)  # F_i / outdeg(i)
    if omega is None:
        return lambda x: back @ (real * x), 0.0
    in_deg = np.bincount(dst, minlength=n)
    strength = back @ out_deg - in_deg  # summed weight of each page's virtual edges
    virtual = impact_factor(impact, strength, gamma) / np.maximum(strength, 1)

    def step(x: np.ndarray) -> np.ndarray:
        y = virtual * x
        return omega * (back @ (real * x)) + (1.0 - omega) * (back @ (a @ y) - in_deg * y)

    return step, float(strength.sum())


def stage_walk(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, enrich: bool) -> dict[str, object]:
    """Run the walk (enriched when ``enrich``) and stage ``s_walk`` (url, score) for the policy SQL."""
    n, src, dst = known_graph(con)
    pages, source = observed_impact(con, settings, cycle)
    ids = con.sql("SELECT url, id FROM r_ids").pl().join(pages.select("url", "impact"), on="url", how="left")
    impact = np.full(n, settings.rw_epsilon)
    impact[ids["id"].to_numpy()] += ids["impact"].fill_null(0).to_numpy()
    step, virtual_weight = walk_step(src, dst, n, impact, settings.rw_gamma, settings.rw_omega if enrich else None)
    fit = power_iteration(step, n, settings.rw_damping, TOL, MAX_ITER)
    with staged(con, s_walk_scores=pl.DataFrame({"id": np.arange(n), "score": fit.scores})):
        run_sql(con, "ordering/random_walk/walk_scores")
    con.execute("DROP TABLE r_ids")
    metrics = {"nodes": n, "edges": len(src), "virtual_weight": virtual_weight, "impact_source": source,
               "pages_with_impact": int((pages["impact"] > 0).sum()), "iterations": fit.iterations,
               "residual": fit.residual, "converged": fit.residual < TOL}
    record_model(con, cycle, "rw_eg" if enrich else "rw", ["links", "impact"], metrics)
    return {}


def stage_rw(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    return stage_walk(con, settings, cycle, enrich=False)


def stage_rw_eg(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    return stage_walk(con, settings, cycle, enrich=True)
