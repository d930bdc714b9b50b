"""How good a simulated crawl's repository is at each cycle, against the web served at that cycle.

- **User-centric quality** (Pandey & Olston, *User-centric Web crawling*, WWW 2005). For each query q of the
  cycle's query-log partition, the crawl's own results (``query_results`` of the cycle: its stored copies ranked by
  the reference ranker) r_1..r_K; a result counts if the live page belongs in the live top K of q (the ground truth
  of the cycle, by a judge), weighted by the likelihood V(i) = i^-1.5 that a user looks at rank i and by the
  query's frequency f(q):

      quality = Σ_q f(q) Σ_i V(i)·[r_i ∈ liveTopK(q)] / Σ_q f(q) Σ_{i ≤ |liveTopK(q)|} V(i)

  so 1.0 is a repository that shows exactly the live top K of every query (fresh and complete); queries whose live
  top K is empty count for nothing. Judged by the reference ranker's live top K (``quality``) and by the independent
  judge's (``quality_bm25s``). On a web that does not change it measures completeness only.
- **Completeness** (``complete``, ``complete_bm25s``): the quality the same stored pages would give if every copy
  were fresh and ranked in the live order, i.e. each query's live top K restricted to the stored pages, moved up to
  ranks 1, 2, ... No ranking of the stored pages does better, so quality <= complete: complete is what the choice of
  pages gives, and complete - quality what stale copies and the crawl's partial link graph and statistics cost.
- **Freshness** (Cho & Garcia-Molina): the share of indexed pages (the ranker's documents) whose stored main-text
  signature (``pages.content_hash``) equals the live page's; a page the live web no longer has is not fresh.
- **Age**: the mean over indexed pages of the cycles since the live page last matched the stored copy (0 when
  fresh; a page that diverged at the cycle measured is 1 old).
- **Calibration of the change models**: what each model (``change_model``) predicted at the close of a cycle, P(the
  stored copy differs from the page the next fetch would get), against what the next cycle's live web holds (a page
  gone counts as changed): per bin of predicted P, the mean prediction and the share changed, and the Brier score
  (mean squared error of the predictions; 0 is perfect, always answering the base rate scores rate x (1 - rate)).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import connect, query
from crawlcycle.evaluation.ground_truth import LEAD_JUDGES, Truth
from crawlcycle.settings import Settings

VIEW_EXPONENT = 1.5  # V(i) = i^-1.5 (Pandey & Olston 2005)
FIGURES = ("quality", "quality_bm25s", "complete", "complete_bm25s", "freshness", "age")
COLUMNS = ("cycle", *FIGURES, "indexed", "batch_new", "batch_refresh")


def view(rank: int) -> float:
    """The likelihood that a user looks at result rank ``rank`` (1-based), relative to the first."""
    return rank ** -VIEW_EXPONENT


def quality(results: pl.DataFrame, live: pl.DataFrame, workload: pl.DataFrame) -> float | None:
    """Repository quality of ``results`` (query, rank, url: the crawl's top K) against ``live`` (query, rank, url:
    the live top K), weighted by ``workload`` (query, frequency); None when no query has a live result."""
    frequency = dict(workload.select("query", "frequency").iter_rows())
    shown = {(q, u) for q, u in live.select("query", "url").iter_rows()}
    got = math.fsum(frequency.get(q, 0.0) * view(r) for q, r, u in results.select("query", "rank", "url").iter_rows()
                    if (q, u) in shown)
    sizes = live.group_by("query").len()
    best = math.fsum(frequency.get(q, 0.0) * math.fsum(view(i) for i in range(1, n + 1)) for q, n in sizes.iter_rows())
    return got / best if best else None


def completeness(stored: pl.Series, live: pl.DataFrame, workload: pl.DataFrame) -> float | None:
    """The quality of a repository holding the pages ``stored`` (urls), fresh and in the live order of ``live``."""
    best = (live.filter(pl.col("url").is_in(stored.implode())).sort("query", "rank")
            .with_columns(rank=pl.int_range(1, pl.len() + 1).over("query")))
    return quality(best, live, workload)


def live_hashes(truth: Truth) -> dict[str, str | None]:
    """url -> main-text signature of every page of a cycle's live web."""
    return dict(truth.pages.select("url", "content_hash").iter_rows())


def measure(settings: Settings, cycle: int, truths: list[Truth], hashes: list[dict[str, str | None]]) -> dict:
    """The figures of cycle ``cycle`` (``COLUMNS``) of the crawl of ``settings``, closed at that cycle, against the
    live web of each cycle so far (``truths`` and their ``live_hashes``, cycle 1 first)."""
    with connect(settings, read_only=True) as con:
        results = query(con, "evaluation/repository/cycle_results", cycle=cycle)
        workload = query(con, "evaluation/repository/cycle_workload", cycle=cycle)
        indexed = query(con, "evaluation/repository/indexed_pages")
        split = dict(query(con, "evaluation/repository/batch_split", cycle=cycle).iter_rows())
    top_k = truths[:cycle][-1].top_k  # truths[0] is cycle 1's
    row: dict = {"cycle": cycle}
    for judge in LEAD_JUDGES:  # as FIGURES names them
        live = top_k.filter(pl.col("judge") == judge)
        suffix = "" if judge == "reference" else "_" + judge
        row[f"quality{suffix}"] = quality(results, live, workload)
        row[f"complete{suffix}"] = completeness(indexed["url"], live, workload)
    ages = []
    for url, stored, stored_cycle in indexed.iter_rows():
        matched = next((c for c in range(cycle, 0, -1) if hashes[c - 1].get(url, "") == stored), stored_cycle)
        ages.append(cycle - matched)
    row["freshness"] = sum(a == 0 for a in ages) / len(ages) if ages else None
    row["age"] = sum(ages) / len(ages) if ages else None
    return {**row, "indexed": len(ages), "batch_new": split.get("new", 0), "batch_refresh": split.get("refresh", 0)}


CHANGE_MODELS = ("p_poisson", "p_bursts")


def predicted_changes(settings: Settings, cycle: int, live: dict[str, str | None]) -> pl.DataFrame:
    """Every stored page as cycle ``cycle`` of the crawl of ``settings`` closed, with what each change model predicts
    for the fetch of the next cycle (``CHANGE_MODELS``) and ``changed``: its stored copy differs from ``live``, the
    main-text signatures of the next cycle's web (``live_hashes``)."""
    with connect(settings, read_only=True) as con:
        rows = query(con, "evaluation/repository/predicted_changes", fetch_cycle=batch_cycles(score=cycle)[1],
                     refresh=json.dumps(settings.section("refresh")))
    now = pl.DataFrame({"url": list(live), "live_hash": list(live.values()), "live": True},
                       schema={"url": pl.String, "live_hash": pl.String, "live": pl.Boolean})
    differs = pl.col("live").is_null() | pl.col("live_hash").ne_missing(pl.col("content_hash"))
    return rows.join(now, on="url", how="left").with_columns(cycle=pl.lit(cycle, pl.Int32), changed=differs) \
        .drop("live_hash", "live", "content_hash")


def calibration(predicted: pl.DataFrame, bins: int = 10) -> dict:
    """Per change model: ``brier`` and ``bins``, the predictions cut at k / ``bins`` (n, mean predicted, share
    changed), over ``predicted`` (rows of :func:`predicted_changes`); with the pages' base rate of change."""
    if predicted.is_empty():
        return {}
    changed = predicted["changed"].cast(pl.Float64)
    out: dict = {"pages": predicted.height, "changed": round(float(changed.mean()), 6)}
    for model in CHANGE_MODELS:
        p = predicted[model]
        per_bin = predicted.with_columns(bin=(p * bins).floor().clip(0, bins - 1).cast(pl.Int32)).group_by("bin").agg(
            n=pl.len(), predicted=pl.col(model).mean(), observed=pl.col("changed").cast(pl.Float64).mean()
        ).sort("bin")
        out[model] = {"brier": round(float(((p - changed) ** 2).mean()), 6),
                      "bins": [{k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()}
                               for row in per_bin.iter_rows(named=True)]}
    return out


def summary(rows: list[dict], first_switch: int | None) -> dict:
    """Each cycle's figures, and each figure's mean over all cycles and over the cycles from the first version switch
    on (null without a switch, or where no cycle has the figure)."""

    def means(chosen: list[dict]) -> dict:
        out: dict = {"cycles": len(chosen)}
        for name in (*FIGURES, "batch_new", "batch_refresh"):
            values = [r[name] for r in chosen if r[name] is not None]
            out[name] = round(math.fsum(values) / len(values), 9) if values else None
        return out

    after = [r for r in rows if first_switch is not None and r["cycle"] >= first_switch]
    return {"cycles": rows, "first_switch": first_switch, "mean": means(rows),
            "mean_after_first_switch": means(after) if after else None}


def write_csv(rows: list[dict], path: Path) -> None:
    pl.DataFrame(rows, schema={c: pl.Int64 if c in ("cycle", "indexed", "batch_new", "batch_refresh") else pl.Float64
                               for c in COLUMNS}).write_csv(path)


def plot(runs: dict[str, list[dict]], path: Path, title: str, first_switch: int | None) -> None:
    """Quality (reference judge) and freshness per cycle, one line per run; the first version switch marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    palette = plt.get_cmap("tab10").colors
    for i, (name, rows) in enumerate(runs.items()):
        cycles = [r["cycle"] for r in rows]
        for ax, figure in ((top, "quality"), (bottom, "freshness")):
            ax.plot(cycles, [r[figure] for r in rows], marker="o", markersize=3, label=name,
                    color=palette[i % 10], linestyle="-" if i < 10 else ":")
    for ax, label in ((top, "user-centric quality"), (bottom, "freshness (share of indexed pages)")):
        if first_switch is not None:
            ax.axvline(first_switch, color="grey", linestyle="--", linewidth=1)
        ax.set_ylabel(label)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    bottom.set_xlabel("cycle")
    top.set_title(title)
    top.legend(ncol=2, fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
