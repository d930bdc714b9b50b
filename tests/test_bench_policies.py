"""The policy lab's repeated runs: seed sets and workloads per run, and mean and spread over runs per judge."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.evaluation.policy_lab import (
    JUDGES,
    Stats,
    aggregate,
    findings,
    headroom_table,
    held_fixed,
    html_pages,
    late_gain,
    paired,
    seed_set,
    shuffled_frequencies,
    table,
    zipf_workload,
)


@pytest.fixture(scope="module")
def dev_docs_pages(dev_docs: Path) -> dict[str, list[str]]:
    return html_pages(dev_docs)


def test_run_0_starts_from_each_site_s_index_page(dev_docs_pages: dict[str, list[str]]) -> None:
    assert seed_set(dev_docs_pages, 0, "/index.html") == [
        "http://django.docs.test/index.html", "http://git.docs.test/index.html",
        "http://nodejs.docs.test/index.html", "http://postgresql.docs.test/index.html",
        "http://python.docs.test/index.html", "http://requests.docs.test/index.html",
        "http://sphinx.docs.test/index.html", "http://sqlite.docs.test/index.html"]


def test_later_runs_start_from_a_random_page_per_host_the_same_for_the_same_run(
        dev_docs_pages: dict[str, list[str]]) -> None:
    runs = [seed_set(dev_docs_pages, r, "/index.html") for r in range(4)]
    assert seed_set(dev_docs_pages, 2, "/index.html") == runs[2]
    assert len({tuple(seeds) for seeds in runs}) == 4
    for seeds in runs[1:]:
        assert [u.split("/")[2] for u in seeds] == [u.split("/")[2] for u in runs[0]]  # one seed per host
        assert all(u in dev_docs_pages[u.split("/")[2]] for u in seeds)
        assert sum(u.endswith("/index.html") for u in seeds) < len(seeds)


def test_seeds_of_the_demo_web_are_its_home_pages_then_random_html_pages(demo_web: DemoWeb) -> None:
    pages = html_pages(demo_web.warc)
    homes = seed_set(pages, 0, "/")
    assert set(demo_web.seeds.read_text().split()) <= set(homes)
    assert all(u.count("/") == 3 and u.endswith("/") for u in homes)
    assert seed_set(pages, 1, "/") != homes and len(seed_set(pages, 1, "/")) == len(homes)


def test_workloads_keep_their_texts_or_frequencies_and_differ_by_seed() -> None:
    texts = [f"query {i}" for i in range(50)] + ["query 3", "  ", "tab\there"]
    base = zipf_workload(texts, 10, 7)
    assert [f for _, f in base] == [1000, 500, 334, 250, 200, 167, 143, 125, 112, 100]
    assert base == zipf_workload(texts, 10, 7) and base != zipf_workload(texts, 10, 8)
    every = [q for q, _ in zipf_workload(texts, 100, 7)]  # distinct, non-blank, tabs made spaces
    assert len(every) == 51 and set(every) == {f"query {i}" for i in range(50)} | {"tab here"}
    shuffled = shuffled_frequencies(base, 8)
    assert [q for q, _ in shuffled] == [q for q, _ in base]
    assert sorted(f for _, f in shuffled) == sorted(f for _, f in base) and shuffled != base


def _summary(seconds: float, pct: dict[str, tuple], p_cs: float = 0.3,
             waste: tuple[float, float] | None = None, regret: tuple[float, float] | None = None) -> dict:
    """A simulate summary: % of ideal (as shares) at 1 %, 5 %, 10 % per judge; the same P_CS at every budget; the
    shares of slots without a page and to origins that did not answer from cycle 3 on, and the reference judge's
    choice efficiency and discovery from cycle 3 on, when given."""
    summary = {"seconds": seconds, "snapshot_pages": 1000, "budgets_by_judge": {
        judge: {label: {"fetches": k, "pct_of_ideal": v, "p_cs": None if v is None else p_cs, "p_st": 0.1}
                for label, k, v in zip(("1%", "5%", "10%"), (10, 50, 100), values, strict=True)}
        for judge, values in pct.items()}}
    if waste:
        summary["waste"] = {"from_cycle_3": {"waste_share": waste[0], "unanswered_share": waste[1]}}
    if regret:
        summary["regret"] = {"reference": {"mean_from_cycle_3": {"choice_efficiency": regret[0],
                                                                 "discovery": regret[1]}}}
    return summary


RUNS = [
    {"hybrid": _summary(10, {"reference": (0.05, 0.20, 0.30), "bm25s": (0.04, 0.10, 0.20)}, 0.40, (0.05, 0.0),
                        (0.5, 0.8)),
     "pagerank": _summary(20, {"reference": (0.03, 0.10, 0.20), "bm25s": (0.05, 0.15, 0.25)}, 0.50)},
    {"hybrid": _summary(12, {"reference": (0.07, 0.22, 0.36), "bm25s": (0.06, 0.12, 0.22)}, 0.30, (0.07, 0.01),
                        (0.7, 0.9)),
     "pagerank": _summary(22, {"reference": (0.03, 0.12, 0.26), "bm25s": (0.05, 0.17, None)}, 0.50, (0.2, 0.1),
                          (0.4, 0.6))},
    {"hybrid": _summary(14, {"reference": (0.06, 0.24, 0.33), "bm25s": (0.05, 0.14, 0.24)}, 0.20, (0.06, 0.02),
                        (0.6, 1.0)),
     "pagerank": _summary(24, {"reference": (0.03, 0.14, 0.23), "bm25s": (0.05, 0.19, 0.27)}, 0.50, (0.3, 0.1))},
]


def test_aggregate_gives_mean_sample_sd_and_range_per_policy_judge_and_budget() -> None:
    pct = aggregate(RUNS)
    assert set(pct) == {"hybrid", "pagerank"} and all(set(v) == set(JUDGES) for v in pct.values())
    hybrid = pct["hybrid"]["reference"]["10%"]
    assert (hybrid.n, hybrid.lo, hybrid.hi) == (3, 0.30, 0.36)
    assert hybrid.mean == pytest.approx(0.33) and hybrid.sd == pytest.approx(0.03)  # sample sd: n - 1
    assert pct["pagerank"]["reference"]["1%"] == Stats(0.03, 0.0, 0.03, 0.03, 3)
    # a run that did not reach a budget is left out of it
    short = pct["pagerank"]["bm25s"]["10%"]
    assert (short.n, short.mean, short.sd) == (2, pytest.approx(0.26), pytest.approx(math.sqrt(0.0002)))
    assert aggregate(RUNS, "p_cs")["hybrid"]["reference"]["10%"].mean == pytest.approx(0.30)
    one = aggregate(RUNS[:1])["hybrid"]["bm25s"]["5%"]
    assert (one.mean, one.sd, one.n) == (0.10, 0.0, 1)


def test_table_shows_mean_and_sd_per_judge_sorted_by_the_reference_at_10_percent() -> None:
    assert table(RUNS) == [
        "| policy | ref 1% | ref 5% | ref 10% | bm25s 1% | bm25s 5% | bm25s 10% | P_CS at 10% (ref) "
        "| choice efficiency (ref) | discovery (ref) | waste % | unanswered % | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| hybrid | 6.0 ± 1.0 | 22.0 ± 2.0 | 33.0 ± 3.0 | 5.0 ± 1.0 | 12.0 ± 2.0 | 22.0 ± 2.0 | 0.30 ± 0.10 "
        "| 0.60 ± 0.10 | 0.90 ± 0.10 | 6.0 ± 1.0 | 1.0 ± 1.0 | 12 |",
        "| pagerank | 3.0 ± 0.0 | 12.0 ± 2.0 | 23.0 ± 3.0 | 5.0 ± 0.0 | 17.0 ± 2.0 | 26.0 ± 1.4 (2 of 3 runs) "
        "| 0.50 ± 0.00 | 0.40 ± 0.00 (1 of 3 runs) | 0.60 ± 0.00 (1 of 3 runs) | 25.0 ± 7.1 (2 of 3 runs) "
        "| 10.0 ± 0.0 (2 of 3 runs) | 22 |",
    ]
    assert table(RUNS, spread="range")[2] == ("| hybrid | 5.0–7.0 | 20.0–24.0 | 30.0–36.0 | 4.0–6.0 | 10.0–14.0 "
                                              "| 20.0–24.0 | 0.20–0.40 | 0.50–0.70 | 0.80–1.00 | 5.0–7.0 | 0.0–2.0 "
                                              "| 12 |")


# The same runs with the oracle of each judge, far ahead of every policy by the judge it does not order by.
WITH_ORACLES = [{**run, "oracle": _summary(30, {"reference": (0.10, 0.40, 0.40), "bm25s": (0.9, 0.9, 0.9)}),
                 "oracle_bm25s": _summary(30, {"reference": (0.9, 0.9, 0.9), "bm25s": (0.10, 0.35, 0.45)})}
                for run in RUNS]


def test_paired_gives_hybrid_over_the_same_run_s_best_rival_and_the_headroom_it_captured() -> None:
    rows = paired(WITH_ORACLES)
    assert rows[0] == "| run | ref 5% | ref 10% | bm25s 5% | bm25s 10% |" and len(rows) == 2 + 3 + 1
    # the oracles are no rivals: headroom (hybrid − pagerank) ÷ (oracle of the judge − pagerank)
    assert rows[2] == ("| 0 | 2.00, headroom 0.33 (20.0 / pagerank 10.0 / oracle 40.0) "
                       "| 1.50, headroom 0.50 (30.0 / pagerank 20.0 / oracle 40.0) "
                       "| 0.67, headroom -0.25 (10.0 / pagerank 15.0 / oracle 35.0) "
                       "| 0.80, headroom -0.25 (20.0 / pagerank 25.0 / oracle 45.0) |")
    assert rows[3].endswith("| – |")  # no rival reached 10 % under bm25s in run 1
    assert rows[-1].startswith("| mean (min–max) | 1.85 (1.71–2.00), headroom 0.36 (0.33–0.38) "
                               "| 1.44 (1.38–1.50), headroom 0.60 (0.50–0.71) |")
    # without an oracle run there is no headroom
    assert paired(RUNS)[2].startswith("| 0 | 2.00, headroom – (20.0 / pagerank 10.0) |")
    assert paired([{"hybrid": RUNS[0]["hybrid"]}]) == [] and paired([{"pagerank": RUNS[0]["pagerank"]}]) == []
    assert paired([{"hybrid": RUNS[0]["hybrid"], "oracle": WITH_ORACLES[0]["oracle"]}]) == []


def test_the_oracles_are_reference_rows_of_the_tables_never_rivals() -> None:
    rows = table(WITH_ORACLES)
    assert [r.split(" |")[0] for r in rows[2:]] == ["| oracle_bm25s (reference)", "| oracle (reference)", "| hybrid",
                                                   "| pagerank"]
    rows = headroom_table(WITH_ORACLES)
    assert rows[0] == ("| policy | ref 5% ratio | ref 5% headroom | ref 10% ratio | ref 10% headroom | bm25s 5% ratio "
                       "| bm25s 5% headroom | bm25s 10% ratio | bm25s 10% headroom |")
    assert [r.split(" |")[0] for r in rows[2:]] == ["| hybrid", "| pagerank"]
    assert rows[2].startswith("| hybrid | 1.85 (1.71–2.00) | 0.36 (0.33–0.38) | 1.44 (1.38–1.50) | 0.60 (0.50–0.71) |")
    assert rows[2].endswith("| 0.84 (0.80–0.89) (2 of 3 runs) | -0.21 (-0.25–-0.17) (2 of 3 runs) |")
    # pagerank's best rival is hybrid: at 10 % by the reference judge 20 ÷ 30, 26 ÷ 36, 23 ÷ 33 and
    # (20 − 30) ÷ (40 − 30), (26 − 36) ÷ (40 − 36), (23 − 33) ÷ (40 − 33)
    assert rows[3].split(" | ")[3:5] == ["0.70 (0.67–0.72)", "-1.64 (-2.50–-1.00)"]


def _all_policies(hybrid: float, bm25s_hybrid: float) -> dict[str, dict]:
    """One run of the five policies the findings name: ``hybrid`` at 10 % per judge, the others fixed."""
    ref = {"hybrid": hybrid, "pagerank": 0.25, "indegree": 0.10, "q_overlap": 0.20, "rw": 0.15, "rw_eg": 0.18,
           "bfs": 0.12}
    bm = {**ref, "hybrid": bm25s_hybrid}
    return {p: _summary(1, {"reference": (ref[p] / 4, ref[p] / 2, ref[p]), "bm25s": (bm[p] / 4, bm[p] / 2, bm[p])},
                        p_cs={"pagerank": 0.5, "bfs": 0.4, "indegree": 0.6}.get(p, 0.3)) for p in ref}


def test_findings_are_judged_on_means_by_each_judge() -> None:
    runs = [_all_policies(0.30, 0.20), _all_policies(0.40, 0.22)]
    gains = {"reference": {"q_overlap": 0.05, "pagerank": 0.10, "hybrid": 0.08},
             "bm25s": {"q_overlap": 0.12, "pagerank": 0.10, "hybrid": 0.08}}
    hybrid, q_overlap, rw_eg, cho = findings("dev-docs", runs, gains)
    assert hybrid == ("- **hybrid beats pagerank and indegree** (dev-docs, % of ideal at 10%, mean of 2 runs): "
                      "reference: hybrid 35.0, pagerank 25.0, indegree 10.0: holds; "
                      "bm25s: hybrid 21.0, pagerank 25.0, indegree 10.0: does not hold.")
    assert "reference: q_overlap 5.0, pagerank 6.2, hybrid 8.8: does not hold" in q_overlap
    assert q_overlap.endswith("Drying up (gains less impact share than pagerank and hybrid in the second half of the "
                              "run): reference: q_overlap 0.050, pagerank 0.100, hybrid 0.080: holds; "
                              "bm25s: q_overlap 0.120, pagerank 0.100, hybrid 0.080: does not hold.")
    assert rw_eg.endswith("reference: rw_eg 18.0, rw 15.0, pagerank 25.0: does not hold; "
                          "bm25s: rw_eg 18.0, rw 15.0, pagerank 25.0: does not hold.")
    assert cho.endswith("reference: pagerank 0.50, bfs 0.40, indegree 0.60: does not hold; "
                        "bm25s: pagerank 0.50, bfs 0.40, indegree 0.60: does not hold.")


def test_a_policy_kept_without_its_curves_is_judged_only_by_the_findings_that_read_no_curves() -> None:
    runs = [_all_policies(0.30, 0.20), _all_policies(0.40, 0.22)]
    gains = {"reference": {"pagerank": 0.10, "hybrid": 0.08}, "bm25s": {"pagerank": 0.10, "hybrid": 0.08}}
    *judged, skipped = findings("dev-docs", runs, gains)
    assert [line.split("**")[1] for line in judged] == [
        "hybrid beats pagerank and indegree", "rw_eg beats rw and pagerank",
        "PageRank finds high-in-degree pages sooner than breadth-first and backlink ordering"]
    assert skipped == ("- not judged on dev-docs (their policies were not all run): q_overlap leads early, then dries "
                       "up.")


def test_findings_need_a_budget_every_policy_reached() -> None:
    run = _all_policies(0.3, 0.3)
    for summary in run.values():
        for budgets in summary["budgets_by_judge"].values():
            for entry in budgets.values():
                entry["pct_of_ideal"] = None
    assert findings("generated", [run], {}) == ["- no budget was reached by every policy on generated: run more cycles"]


def test_late_gain_is_the_share_found_in_the_second_half_by_each_judge() -> None:
    curve = pl.DataFrame({"policy": [0.1, 0.2, 0.3, 0.5, 0.9], "policy_bm25s": [0.0, 0.1, 0.4, 0.4, 0.5]})
    assert late_gain(curve) == pytest.approx(0.6)
    assert late_gain(curve, "bm25s") == pytest.approx(0.1)


def test_held_fixed_measures_hybrid_against_the_one_rival_with_the_best_mean_over_all_runs() -> None:
    # two rivals: bfs leads pagerank in one run, pagerank has the higher mean over the three; both hold it fixed
    runs = [{**run, "bfs": _summary(5, {"reference": (0.0, v, v), "bm25s": (0.0, v, v)})}
            for run, v in zip(WITH_ORACLES, (0.23, 0.05, 0.05), strict=True)]
    rows = held_fixed(runs)
    assert rows[0].startswith("| judge | budget | hybrid | strongest rival held fixed |") and len(rows) == 8
    ref5, ref10, bm5, bm10, low5, low10 = rows[2:]
    # reference 5 %: hybrid 22.0, pagerank 12.0 (bfs 11.0); lowest run ratio 0.24 / 0.14 (run 2); oracle 40.0
    assert ref5 == f"| reference | 5% | 22.0 | pagerank 12.0 | {0.22 / 0.12:.3f} | {0.24 / 0.14:.3f} | 40.0 " \
                   f"| {(0.22 - 0.12) / (0.40 - 0.12):.2f} |"
    assert ref10.split(" | ")[3] == "pagerank 23.0" and ref10.endswith(f"| {(0.33 - 0.23) / (0.40 - 0.23):.2f} |")
    # bm25s 10 %: pagerank did not reach it in one run; bfs (11.0) is the rival held fixed there, and it leads hybrid
    # in run 0 (0.23 against 0.20)
    assert bm10.split(" | ")[3] == "bfs 11.0" and bm10.split(" | ")[5] == f"{0.20 / 0.23:.3f}"
    assert bm5.split(" | ")[3] == "pagerank 17.0"
    # the panel minimum of each budget: the judge where hybrid's ratio of the means is lowest (bm25s 10 %: bfs)
    assert low5 == f"| **panel minimum** | 5% | | | **{0.12 / 0.17:.3f}** (bm25s, pagerank) | | | |"
    bm10_ratio, ref10_ratio = float(bm10.split(" | ")[4]), float(ref10.split(" | ")[4])
    assert low10 == f"| **panel minimum** | 10% | | | **{min(bm10_ratio, ref10_ratio):.3f}** " \
                    f"({'bm25s, bfs' if bm10_ratio < ref10_ratio else 'reference, pagerank'}) | | | |"
    assert held_fixed([{"pagerank": run["pagerank"]} for run in RUNS]) == []  # no hybrid: nothing to hold against
