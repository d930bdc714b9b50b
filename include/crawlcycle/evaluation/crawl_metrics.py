"""What a simulated crawl did, measured from its database and the ground truth.

Its fetch order and fetches; the impact curve of the fetch order against the ideal order, with Cho's hot-page
shares, and its figures at each budget (``BUDGETS``, a share of the snapshot's pages); each fetched batch's regret
by each judge (``REGRET``); and per cycle what the batch slots gave (waste) and whether the query-driven part of the
policy engaged, with their means from cycle ``ENGAGEMENT_FROM`` on. The reference runs (``ORACLES``) are measured
like a policy's, and named as references (:func:`label`). The simulator (:mod:`crawlcycle.evaluation.simulator`)
writes these into each run's outputs; the repository's quality per cycle is :mod:`crawlcycle.evaluation.repository`'s.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from crawlcycle.db import connect, query, run_sql, staged
from crawlcycle.devtools.warc_server import Series
from crawlcycle.evaluation.ground_truth import JUDGES, LEAD_JUDGES, Truth
from crawlcycle.fetch.robots import stored_robots
from crawlcycle.pipeline.materialize import robots_filter
from crawlcycle.settings import Settings
from crawlcycle.ui.report import ENGAGEMENT, WASTE

BUDGETS = (0.01, 0.05, 0.10)
ENGAGEMENT_FROM = 3  # the first cycles steer by priors: their models have little or nothing to learn from
# The reference ordering oracle, run for each lead judge: the run's name for the judge whose true impact it reads. A
# reference run is measured like a policy, and is never one of a policy's rivals.
ORACLES = {judge: "oracle" if judge == "reference" else f"oracle_{judge}" for judge in LEAD_JUDGES}
# A batch's regret by one judge (v_batch_regret), in regret.csv and summary.json.
REGRET = ("slots", "chosen", "best_frontier", "best_all", "choice_efficiency", "discovery")


def label(name: str) -> str:
    """A run's name as tables and plots show it: a reference run marked as such."""
    return f"{name} (reference)" if name in ORACLES.values() else name


def fetch_order(settings: Settings) -> pl.DataFrame:
    """Every URL the fetcher tried, once, in fetch order: url, cycle, rank and the 2xx page it ended on (null for a
    404 or a failure). Deferred and robots-disallowed URLs were not tried."""
    with connect(settings, read_only=True) as con:
        return query(con, "evaluation/crawl_metrics/fetch_order")


def fetches(settings: Settings, web: Series) -> pl.DataFrame:
    """Every fetch of a batch URL the fetcher tried, refreshes included, in fetch order: cycle, url, rank, kind, the
    version (1-based) ``web`` served it from, and outcome (a check's, else the fetch's)."""
    with connect(settings, read_only=True) as con:
        rows = query(con, "evaluation/crawl_metrics/fetches")
    versions = [web.version_of(url, cycle) + 1 for cycle, url in rows.select("cycle", "url").iter_rows()]
    return rows.insert_column(4, pl.Series("version", versions, dtype=pl.Int64))


def cycle_rows(settings: Settings, names: list[str]) -> list[dict]:
    """Columns ``names`` of every cycle of ``v_cycle_summary``, JSON columns as objects."""
    with connect(settings, read_only=True) as con:
        rows = con.sql(f"SELECT cycle, {', '.join(names)} FROM v_cycle_summary ORDER BY cycle").pl().to_dicts()
    return [{k: json.loads(v) if k in ("slots_failed", "slots_skipped") and v else v for k, v in r.items()}
            for r in rows]


def waste(settings: Settings) -> dict:
    """What each cycle's batch slots gave (``WASTE``), and from cycle ``ENGAGEMENT_FROM`` on: the share of slots that
    gave no page (``waste_share``, broken links included), the share that went to origins that did not answer, and
    the origins probed; with ``urls_gone_unanswered``, frontier URLs given up without ever getting an answer of their
    own (what a back-off that loses URLs would leave)."""
    rows = cycle_rows(settings, ["batch_size", *WASTE])
    late = [r for r in rows if r["cycle"] >= ENGAGEMENT_FROM and r["batch_size"]]
    slots = sum(r["batch_size"] for r in late)
    with connect(settings, read_only=True) as con:
        gone = con.sql("SELECT count(*) FROM frontier f WHERE status = state_gone() AND NOT EXISTS "
                       "(SELECT 1 FROM fetch_log l WHERE l.url = f.url AND l.status IS NOT NULL)").fetchall()[0][0]
    return {"cycles": rows, f"from_cycle_{ENGAGEMENT_FROM}": {
        "slots": slots,
        "waste_share": round(1 - sum(r["slots_fetched"] for r in late) / slots, 9) if slots else None,
        "unanswered_share": round(sum(r["slots_unanswered"] for r in late) / slots, 9) if slots else None,
        "probes": sum(r["probes"] for r in late)}, "urls_gone_unanswered": gone}


def waste_line(summary: dict) -> str:
    """A summary's batch slots from cycle ``ENGAGEMENT_FROM`` on, in one line."""
    w = summary["waste"]
    late = w[f"from_cycle_{ENGAGEMENT_FROM}"]
    if not late["slots"]:
        return f"no batch slots from cycle {ENGAGEMENT_FROM} on"
    return (f"{late['slots']} slots from cycle {ENGAGEMENT_FROM} on: waste {100 * late['waste_share']:.1f} %, to "
            f"origins that did not answer {100 * late['unanswered_share']:.1f} %, {late['probes']} origins probed; "
            f"{w['urls_gone_unanswered']} URLs given up without an answer")


def engagement(settings: Settings) -> dict:
    """Each cycle's engagement figures (``ENGAGEMENT``, from ``v_cycle_summary``) and their means from cycle
    ``ENGAGEMENT_FROM`` on, over the cycles that have each (null: none has)."""
    rows = cycle_rows(settings, ENGAGEMENT)
    late = [r for r in rows if r["cycle"] >= ENGAGEMENT_FROM]
    means = {}
    for name in ENGAGEMENT:
        values = [r[name] for r in late if r[name] is not None]
        means[name] = round(sum(values) / len(values), 9) if values else None
    return {"cycles": rows, f"mean_from_cycle_{ENGAGEMENT_FROM}": means}


def engagement_text(summary: dict) -> str:
    """A summary's engagement means (from cycle ``ENGAGEMENT_FROM`` on) in one line; "n/a" where there are none."""
    means = summary.get("engagement", {}).get(f"mean_from_cycle_{ENGAGEMENT_FROM}", {})

    def count(key: str) -> str:
        return "n/a" if means.get(key) is None else f"{means[key]:.0f}"

    def share(key: str) -> str:
        return "n/a" if means.get(key) is None else f"{100 * means[key]:.1f}%"

    return (f"needy {count('needy_queries')}, with candidates {count('needy_with_candidates')}, sketch pages "
            f"{count('sketch_frontier_pages')}, batch query share {share('batch_query_share')}, mass "
            f"{share('batch_query_mass')} (means of cycles>={ENGAGEMENT_FROM})")


def curve(order: pl.DataFrame, truth: Truth) -> pl.DataFrame:
    """Cumulative impact share of the fetch order and of the ideal order (``policy``/``ideal`` by the reference
    judge, ``policy_<judge>``/``ideal_<judge>`` by the others), with Cho's hot-page shares."""
    n_pages = truth.pages.height
    pages = truth.pages.with_columns(by_degree=pl.col("in_links").rank("ordinal", descending=True))
    first = order.with_columns(pl.when(pl.col("page").is_first_distinct()).then(pl.col("page")).alias("page"))
    got = first.join(pages, left_on="page", right_on="url", how="left", maintain_order="left")
    k = pl.int_range(1, order.height + 1, eager=True)
    columns = {"fetched": k, "fraction": k / n_pages}
    for judge in JUDGES:
        column, suffix = Truth.column(judge), "" if judge == "reference" else f"_{judge}"
        total = truth.total(judge) or 1.0
        ideal = truth.pages[column].sort(descending=True).cum_sum()
        ideal = pl.concat([ideal, pl.repeat(ideal[-1] if ideal.len() else 0.0, max(0, order.height - ideal.len()),
                                            eager=True)])[:order.height]
        columns[f"policy{suffix}"] = got[column].fill_null(0).cum_sum() / total
        columns[f"ideal{suffix}"] = ideal / total
    columns["p_cs"] = _crawl_and_stop(got["by_degree"].fill_null(n_pages + 1).to_numpy())
    columns["p_st"] = got["hot"].fill_null(False).cast(pl.Int64).cum_sum() / max(1, int(truth.pages["hot"].sum()))
    return pl.DataFrame(columns, schema={name: pl.Int64 if name == "fetched" else pl.Float64 for name in columns})


def _crawl_and_stop(by_degree: np.ndarray) -> np.ndarray:
    """Cho's P_CS after each fetch k: share of the first k fetches among the k pages of highest in-degree.
    The i-th fetch (1-based), of in-degree rank d, counts from k = max(i, d) on."""
    n = len(by_degree)
    counts = np.bincount(np.maximum(np.arange(1, n + 1), by_degree), minlength=n + 2)[1:n + 1]
    return np.cumsum(counts) / np.arange(1, n + 1)


def summarize(points: pl.DataFrame, truth: Truth, judge: str = "reference") -> dict:
    """% of ideal (by ``judge``) and hot-page shares at each budget; null where the run fetched less than it."""
    suffix = "" if judge == "reference" else f"_{judge}"
    out = {}
    for budget in BUDGETS:
        k = max(1, round(budget * truth.pages.height))
        if k > points.height:
            out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": None, "p_cs": None, "p_st": None}
            continue
        row = points.row(k - 1, named=True)
        ideal = row[f"ideal{suffix}"]
        out[f"{budget:.0%}"] = {"fetches": k, "pct_of_ideal": row[f"policy{suffix}"] / ideal if ideal else None,
                                "p_cs": row["p_cs"], "p_st": row["p_st"]}
    return out


def batch_regret(settings: Settings, truth: Truth) -> pl.DataFrame:
    """Each fetched batch's regret by each judge, written into the crawl's database (``batch_regret``,
    ``batch_passed_over``, read by ``v_batch_regret``) and returned: judge, cycle and ``REGRET``. Only pages the
    crawl's stored robots.txt allows count: no batch may hold the others."""
    with connect(settings) as con:
        # the same URLs, in the same order, for every judge
        allowed = robots_filter(stored_robots(con, settings), truth.impact(JUDGES[0]))
        for judge in JUDGES:
            with staged(con, s_true_impact=truth.impact(judge).filter(allowed)):
                run_sql(con, "evaluation/crawl_metrics/batch_regret", judge=judge, per_host_cap=settings.per_host_cap)
        return con.sql(f"SELECT judge, cycle, {', '.join(REGRET)} FROM v_batch_regret ORDER BY judge, cycle").pl()


def regret_summary(regret: pl.DataFrame) -> dict:
    """Per judge: each cycle's regret figures, and the means of choice efficiency and discovery over the cycles from
    ``ENGAGEMENT_FROM`` on that have them (null: none has)."""
    out = {}
    for judge in JUDGES:
        rows = regret.filter(pl.col("judge") == judge).drop("judge")
        late = rows.filter(pl.col("cycle") >= ENGAGEMENT_FROM)
        means = {name: None if late[name].is_null().all() else round(float(late[name].mean()), 9)
                 for name in ("choice_efficiency", "discovery")}
        out[judge] = {"cycles": rows.to_dicts(), f"mean_from_cycle_{ENGAGEMENT_FROM}": means}
    return out

