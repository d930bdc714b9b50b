"""Repeated policy comparisons: per-run seed sets and workloads, and mean and spread of each policy's results.

A run of the policy lab is one ``simulator.simulate`` call over every policy. Run 0 starts from each host's
home page with the base workload; run r > 0 starts from a random page of each host and reassigns the query
frequencies by a shuffle seeded with r, so a policy's lead can be told apart from the luck of one start.
Results are aggregated per policy, judge and budget over the runs' summaries (``budgets_by_judge``). The reference
runs (``crawl_metrics.ORACLES``: the oracle ordering by each judge's true impact) are shown beside the policies,
marked as references, and are never a policy's rival: each policy is measured against the best other policy of the
same run (the ratio) and against the room the oracle of the judge leaves above that rival (the headroom captured).
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.evaluation.crawl_metrics import BUDGETS, ORACLES, label
from crawlcycle.evaluation.ground_truth import JUDGES
from crawlcycle.evaluation.judge import HTML_TYPES

WORKLOAD_SEED = 7


def html_pages(warc: Path) -> dict[str, list[str]]:
    """Per host, the sorted URLs of the snapshot's 2xx HTML responses (as recorded): the pages a seed can be."""
    pages: dict[str, set[str]] = {}
    with warc.open("rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type != "response" or rec.http_headers is None:
                continue
            status = rec.http_headers.get_statuscode() or ""
            ctype = (rec.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
            if status.startswith("2") and ctype in HTML_TYPES:
                url = rec.rec_headers.get_header("WARC-Target-URI").strip("<>")
                pages.setdefault(url.split("/")[2], set()).add(url)
    return {host: sorted(urls) for host, urls in sorted(pages.items())}


def seed_set(pages: dict[str, list[str]], run: int, home: str | tuple[str, ...]) -> list[str]:
    """The seeds of run ``run``: each host's home page (its shortest URL ending in ``home``, or in one of the
    endings ``home`` lists) for run 0; for run r > 0 a page of that host drawn by ``random.Random(r)``. Hosts
    without a home page get no seed."""
    homes = {host: min((u for u in urls if u.endswith(home)), key=len, default=None) for host, urls in pages.items()}
    hosts = sorted(h for h, u in homes.items() if u)
    if run == 0:
        return [homes[h] for h in hosts]
    rng = random.Random(run)
    return [rng.choice(pages[h]) for h in hosts]


def zipf_workload(texts: list[str], n_queries: int, seed: int) -> list[tuple[str, int]]:
    """``n_queries`` of the distinct ``texts`` in a shuffle seeded by ``seed``, with Zipf frequencies
    f = ceil(1000 / rank): real query texts, synthetic popularity."""
    texts = sorted({t.strip().replace("\t", " ") for t in texts if t.strip()})
    random.Random(seed).shuffle(texts)
    return [(t, math.ceil(1000 / rank)) for rank, t in enumerate(texts[:n_queries], 1)]


def shuffled_frequencies(workload: list[tuple[str, int]], seed: int) -> list[tuple[str, int]]:
    """The same queries and the same frequencies, reassigned to the queries by a shuffle seeded by ``seed``."""
    frequencies = [f for _, f in workload]
    random.Random(seed).shuffle(frequencies)
    return [(q, f) for (q, _), f in zip(workload, frequencies, strict=True)]


@dataclass(frozen=True)
class Stats:
    """Mean and spread of one measure over the runs that reached it. ``sd`` is the sample standard deviation
    (n - 1 in the denominator; 0 for a single run)."""

    mean: float
    sd: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Stats | None:
        if not values:
            return None
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), sd, min(values), max(values), len(values))


def budget_label(budget: float) -> str:
    return f"{budget:.0%}"


def aggregate(runs: list[dict[str, dict]], key: str = "pct_of_ideal") -> dict[str, dict[str, dict[str, Stats | None]]]:
    """policy -> judge -> budget label -> Stats of ``key`` over ``runs`` (each: policy -> simulate summary);
    runs where a budget was not reached (null) are left out of its Stats."""
    out: dict[str, dict[str, dict[str, Stats | None]]] = {}
    for policy in sorted({p for run in runs for p in run}):
        judged = [run[policy]["budgets_by_judge"] for run in runs if policy in run]
        out[policy] = {j: {budget_label(b): Stats.of([v for by_judge in judged
                                                      if (v := by_judge.get(j, {}).get(budget_label(b), {}).get(key))
                                                      is not None])
                           for b in BUDGETS} for j in JUDGES}
    return out


def judged_by(runs: list[dict[str, dict]]) -> list[str]:
    """The judges (in ``JUDGES`` order) that judged some policy in some run: results kept from before a judge joined
    the panel lack it, and tables leave out what no run has."""
    judged = {j for run in runs for summary in run.values() for j in summary["budgets_by_judge"]}
    return [j for j in JUDGES if j in judged]


def summary_stats(runs: list[dict[str, dict]], *path: str) -> dict[str, Stats | None]:
    """Per policy, Stats over ``runs`` of the summaries' figure at ``path``, e.g. ``("waste", "from_cycle_3",
    "waste_share")`` or ``("regret", "reference", "mean_from_cycle_3", "choice_efficiency")``; runs without it are
    left out."""

    def figure(summary: dict) -> float | None:
        value: object = summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, float | int) else None

    return {p: Stats.of([v for run in runs if p in run if (v := figure(run[p])) is not None])
            for p in {p for r in runs for p in r}}


def mean_seconds(runs: list[dict[str, dict]]) -> dict[str, float]:
    """Each policy's mean seconds per run."""
    return {p: statistics.fmean(run[p]["seconds"] for run in runs if p in run) for p in {p for r in runs for p in r}}


def _cell(s: Stats | None, runs: int, scale: float, digits: int, spread: str) -> str:
    if s is None:
        return "—"
    text = (f"{scale * s.mean:.{digits}f} ± {scale * s.sd:.{digits}f}" if spread == "sd"
            else f"{scale * s.lo:.{digits}f}–{scale * s.hi:.{digits}f}")
    return text if s.n == runs else f"{text} ({s.n} of {runs} runs)"


def _head(judge: str, budget: str) -> str:
    """A column head of the tables: the judge (``ref`` for the reference ranker) and the budget."""
    return f"{'ref' if judge == 'reference' else judge} {budget}"


def table(runs: list[dict[str, dict]], spread: str = "sd") -> list[str]:
    """Markdown rows, one per policy sorted by the reference judge's mean % of ideal at the largest budget, after the
    reference runs (marked):
    % of ideal per judge and budget as ``mean ± sd`` (``spread="range"``: ``min–max``), the reference P_CS
    at the largest budget, the reference judge's mean choice efficiency and discovery of the batches from cycle 3 on,
    the share of batch slots from cycle 3 on that gave no page and that went to origins that did not answer (in per
    cent), and the mean seconds."""
    pct, pcs, seconds = aggregate(runs), aggregate(runs, "p_cs"), mean_seconds(runs)
    regret = [summary_stats(runs, "regret", "reference", "mean_from_cycle_3", key)
              for key in ("choice_efficiency", "discovery")]
    wasted, unanswered = (summary_stats(runs, "waste", "from_cycle_3", key)
                          for key in ("waste_share", "unanswered_share"))
    last, judges = budget_label(BUDGETS[-1]), judged_by(runs)
    heads = [_head(j, budget_label(b)) for j in judges for b in BUDGETS]
    rows = ["| policy | " + " | ".join(heads) + f" | P_CS at {last} (ref) | choice efficiency (ref) | discovery (ref) "
            "| waste % | unanswered % | seconds |", "|---" * (len(heads) + 7) + "|"]

    def order(policy: str) -> tuple[bool, float]:
        s = pct[policy]["reference"][last]
        return policy not in ORACLES.values(), -s.mean if s else math.inf

    for p in sorted(pct, key=order):
        cells = [_cell(pct[p][j][budget_label(b)], len(runs), 100, 1, spread) for j in judges for b in BUDGETS]
        cells.append(_cell(pcs[p]["reference"][last], len(runs), 1, 2, spread))
        cells += [_cell(r[p], len(runs), 1, 2, spread) for r in regret]
        cells += [_cell(wasted[p], len(runs), 100, 1, spread), _cell(unanswered[p], len(runs), 100, 1, spread)]
        rows.append(f"| {label(p)} | " + " | ".join(cells) + f" | {seconds[p]:.0f} |")
    return rows


def pct_of_ideal(summary: dict, judge: str, budget: str) -> float | None:
    cell = summary["budgets_by_judge"].get(judge, {}).get(budget)
    return cell["pct_of_ideal"] if cell else None


def against_best_rival(summaries: dict[str, dict], policy: str, judge: str, budget: str) -> dict | None:
    """``policy``'s % of ideal in one run (``summaries``: policy -> summary) against the best other policy of the
    run (the reference runs are no rivals) and the oracle of ``judge``: ``mine``, ``best``, ``rival`` (its name),
    ``oracle``, ``ratio`` (mine ÷ best) and ``headroom`` ((mine − best) ÷ (oracle − best): the share of the room the
    oracle leaves above the best rival that the policy took; null without an oracle run or when the oracle is not
    above the rival). None when ``policy`` or every rival did not reach the budget."""
    rivals = [(v, p) for p, s in summaries.items() if p != policy and p not in ORACLES.values()
              if (v := pct_of_ideal(s, judge, budget)) is not None]
    mine = pct_of_ideal(summaries[policy], judge, budget) if policy in summaries else None
    if mine is None or not rivals or max(rivals)[0] <= 0:
        return None
    best, rival = max(rivals)
    oracle = pct_of_ideal(summaries[ORACLES[judge]], judge, budget) if ORACLES.get(judge) in summaries else None
    headroom = (mine - best) / (oracle - best) if oracle is not None and oracle > best else None
    return {"mine": mine, "best": best, "rival": rival, "oracle": oracle, "ratio": mine / best, "headroom": headroom}


def _spread(values: list[float]) -> str:
    return f"{statistics.fmean(values):.2f} ({min(values):.2f}–{max(values):.2f})" if values else "–"


def paired(runs: list[dict[str, dict]], policy: str = "hybrid") -> list[str]:
    """Markdown rows, one per run: ``policy``'s % of ideal over the best other policy's of the same run and the
    headroom it captured (:func:`against_best_rival`), per judge at the two largest budgets, with that rival's and
    the oracle's % of ideal; a last row with the mean and the range (min–max) of both. Empty when ``policy`` or every
    rival is missing."""
    if not runs or any(policy not in r or len(set(r) - set(ORACLES.values())) < 2 for r in runs):
        return []
    cols = [(j, budget_label(b)) for j in judged_by(runs) for b in BUDGETS[-2:]]
    rows = ["| run | " + " | ".join(_head(j, b) for j, b in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    ratios: dict[tuple[str, str], list[float]] = {c: [] for c in cols}
    headrooms: dict[tuple[str, str], list[float]] = {c: [] for c in cols}
    for r, summaries in enumerate(runs):
        cells = []
        for j, b in cols:
            got = against_best_rival(summaries, policy, j, b)
            if got is None:
                cells.append("–")
                continue
            ratios[(j, b)].append(got["ratio"])
            if got["headroom"] is not None:
                headrooms[(j, b)].append(got["headroom"])
            headroom = "–" if got["headroom"] is None else f"{got['headroom']:.2f}"
            oracle = "" if got["oracle"] is None else f" / oracle {100 * got['oracle']:.1f}"
            cells.append(f"{got['ratio']:.2f}, headroom {headroom} ({100 * got['mine']:.1f} / {got['rival']} "
                         f"{100 * got['best']:.1f}{oracle})")
        rows.append(f"| {r} | " + " | ".join(cells) + " |")
    rows.append("| mean (min–max) | " + " | ".join(
        f"{_spread(ratios[c])}, headroom {_spread(headrooms[c])}" for c in cols) + " |")
    return rows


def headroom_table(runs: list[dict[str, dict]]) -> list[str]:
    """Markdown rows, one per policy (the reference runs are not measured against themselves), sorted by the
    reference judge's mean headroom at the largest budget: per judge at the two largest budgets the ratio to the
    best rival of the same run and the headroom captured (:func:`against_best_rival`), as mean (min–max) over the
    runs, "(n of N runs)" when some runs have none."""
    cols = [(j, budget_label(b)) for j in judged_by(runs) for b in BUDGETS[-2:]]
    policies = sorted({p for run in runs for p in run} - set(ORACLES.values()))
    figures: dict[str, dict[tuple[str, str, str], list[float]]] = {p: {} for p in policies}
    for p in policies:
        for j, b in cols:
            got = [g for run in runs if (g := against_best_rival(run, p, j, b)) is not None]
            for key in ("ratio", "headroom"):
                figures[p][(j, b, key)] = [g[key] for g in got if g[key] is not None]
    rows = ["| policy | " + " | ".join(f"{_head(j, b)} {key}" for j, b in cols for key in ("ratio", "headroom"))
            + " |", "|---" * (2 * len(cols) + 1) + "|"]

    def cell(values: list[float]) -> str:
        return _spread(values) + ("" if len(values) in (0, len(runs)) else f" ({len(values)} of {len(runs)} runs)")

    def order(p: str) -> float:
        values = figures[p][("reference", budget_label(BUDGETS[-1]), "headroom")]
        return -statistics.fmean(values) if values else math.inf

    for p in sorted(policies, key=order):
        rows.append(f"| {p} | " + " | ".join(cell(figures[p][(*c, key)]) for c in cols
                                             for key in ("ratio", "headroom")) + " |")
    return rows


def _mean_pct(runs: list[dict[str, dict]], policy: str, judge: str, budget: str) -> float | None:
    """``policy``'s mean % of ideal over ``runs``; None if a run lacks it or did not reach the budget."""
    values = [pct_of_ideal(r[policy], judge, budget) if policy in r else None for r in runs]
    return statistics.fmean(values) if values and None not in values else None


def held_fixed_figures(runs: list[dict[str, dict]], policy: str = "hybrid") -> list[dict]:
    """Per judge and budget (the two largest), over ``runs`` pooled (several snapshots' runs together): ``policy``'s
    mean % of ideal (``mine``) against the strongest rival *held fixed* (``rival``: the other policy with the highest
    mean over the same runs, judged by that judge in every run; ``best``: its mean), ``ratio`` of the means,
    ``lowest`` ratio in one run, the judge's oracle mean (None without its run) and the ``headroom`` captured on the
    means, (policy − rival) ÷ (oracle − rival). Empty unless every run has ``policy``."""
    if not runs or any(policy not in r for r in runs):
        return []
    rivals = {p for r in runs for p in r} - {policy, *ORACLES.values()}
    out = []
    for j in JUDGES:
        for b in map(budget_label, BUDGETS[-2:]):
            means = {p: m for p in rivals if (m := _mean_pct(runs, p, j, b)) is not None}
            mine = _mean_pct(runs, policy, j, b)
            if not means or mine is None:
                continue
            rival = max(means, key=means.get)
            oracle = _mean_pct(runs, ORACLES[j], j, b) if j in ORACLES else None
            out.append({"judge": j, "budget": b, "mine": mine, "rival": rival, "best": means[rival],
                        "ratio": mine / means[rival], "oracle": oracle,
                        "lowest": min(pct_of_ideal(r[policy], j, b) / pct_of_ideal(r[rival], j, b) for r in runs),
                        "headroom": None if oracle is None or oracle <= means[rival]
                        else (mine - means[rival]) / (oracle - means[rival])})
    return out


def held_fixed(runs: list[dict[str, dict]], policy: str = "hybrid") -> list[str]:
    """Markdown rows of :func:`held_fixed_figures`, one per judge and budget, then the panel minimum of each budget:
    the lowest ratio of the means over the judges, and the judge it falls to. Empty unless every run has
    ``policy``."""
    figures = held_fixed_figures(runs, policy)
    if not figures:
        return []
    rows = [f"| judge | budget | {policy} | strongest rival held fixed | ratio of the means | lowest ratio in a run "
            "| oracle | headroom on the means |", "|---" * 8 + "|"]
    for f in figures:
        oracle = "–" if f["oracle"] is None else f"{100 * f['oracle']:.1f}"
        headroom = "–" if f["headroom"] is None else f"{f['headroom']:.2f}"
        rows.append(f"| {f['judge']} | {f['budget']} | {100 * f['mine']:.1f} | {f['rival']} {100 * f['best']:.1f} | "
                    f"{f['ratio']:.3f} | {f['lowest']:.3f} | {oracle} | {headroom} |")
    for b in dict.fromkeys(f["budget"] for f in figures):
        low = min((f for f in figures if f["budget"] == b), key=lambda f: f["ratio"])
        rows.append(f"| **panel minimum** | {b} | | | **{low['ratio']:.3f}** ({low['judge']}, {low['rival']}) | | | |")
    return rows


def late_gain(curve: pl.DataFrame, judge: str = "reference") -> float:
    """Impact share (by ``judge``: the simulator's curve column ``policy`` or ``policy_<judge>``) a policy gains
    over the last half of its run: how much it still finds."""
    column = curve["policy" if judge == "reference" else f"policy_{judge}"]
    return float(column[-1] - column[curve.height // 2])


def findings(name: str, runs: list[dict[str, dict]], gains: dict[str, dict[str, float]]) -> list[str]:
    """The four findings of the papers, judged on the means over ``runs`` by each judge; ``gains`` is, per judge
    and policy, the mean ``late_gain`` over the runs' curves. A finding whose policies were not all run is
    left out, and a last line names it."""
    pct, pcs = aggregate(runs), aggregate(runs, "p_cs")
    # by the judges that judged every policy (results kept from before a judge joined the panel lack it), at the
    # largest budget every policy reached in some run (a short run leaves the larger ones empty)
    judges = [j for j in judged_by(runs) if all(j in r[p]["budgets_by_judge"] for r in runs for p in r)]
    reached = [budget_label(b) for b in BUDGETS if all(pct[p][j][budget_label(b)] for p in pct for j in judges)]
    if not reached:
        return [f"- no budget was reached by every policy on {name}: run more cycles"]
    b0, b1 = reached[0], reached[-1]
    late = {j: {p: 100 * pct[p][j][b1].mean for p in pct} for j in judges}
    early = {j: {p: 100 * pct[p][j][b0].mean for p in pct} for j in judges}
    cho = {j: {p: pcs[p][j][b1].mean for p in pcs} for j in judges}
    gains = {j: gains[j] for j in judges}
    runs_note = f"mean of {len(runs)} run{'s' if len(runs) > 1 else ''}"

    def verdict(holds: bool) -> str:
        return "holds" if holds else "does not hold"

    def beats(values: dict[str, dict[str, float]], first: str, others: tuple[str, str], digits: int) -> str:
        """Per judge: the three policies' values and whether ``first`` is above both others."""
        return "; ".join(f"{j}: " + ", ".join(f"{p} {v[p]:.{digits}f}" for p in (first, *others))
                         + f": {verdict(v[first] > max(v[o] for o in others))}" for j, v in values.items())

    # each finding: (its title, the policies it compares, whether it reads their curves, its line); a line is built
    # only if they were all run (with their curves, where it reads them)
    found = [
        ("hybrid beats pagerank and indegree", ("hybrid", "pagerank", "indegree"), False, lambda: (
            f"- **hybrid beats pagerank and indegree** ({name}, % of ideal at {b1}, {runs_note}): "
            f"{beats(late, 'hybrid', ('pagerank', 'indegree'), 1)}.")),
        ("q_overlap leads early, then dries up", ("q_overlap", "pagerank", "hybrid"), True, lambda: (
            f"- **q_overlap leads early, then dries up** (% of ideal at {b0}, {runs_note}; early lead over pagerank): "
            + "; ".join(f"{j}: q_overlap {v['q_overlap']:.1f}, pagerank {v['pagerank']:.1f}, "
                        f"hybrid {v['hybrid']:.1f}: {verdict(v['q_overlap'] > v['pagerank'])}"
                        for j, v in early.items())
            + ". Drying up (gains less impact share than pagerank and hybrid in the second half of the run): "
            + "; ".join(f"{j}: q_overlap {g['q_overlap']:.3f}, pagerank {g['pagerank']:.3f}, "
                        f"hybrid {g['hybrid']:.3f}: {verdict(g['q_overlap'] < min(g['pagerank'], g['hybrid']))}"
                        for j, g in gains.items()) + ".")),
        ("rw_eg beats rw and pagerank", ("rw_eg", "rw", "pagerank"), False, lambda: (
            f"- **rw_eg beats rw and pagerank** (% of ideal at {b1}, {runs_note}): "
            f"{beats(late, 'rw_eg', ('rw', 'pagerank'), 1)}.")),
        ("PageRank finds high-in-degree pages sooner than breadth-first and backlink ordering",
         ("pagerank", "bfs", "indegree"), False, lambda: (
            f"- **PageRank finds high-in-degree pages sooner than breadth-first and backlink ordering** (Cho's P_CS "
            f"at {b1}, {runs_note}): {beats(cho, 'pagerank', ('bfs', 'indegree'), 2)}.")),
    ]
    # a policy kept from an earlier run without its curves is judged only by the findings that do not read them
    curved = set.intersection(set(pct), *(set(g) for g in gains.values()))
    judged = [(title, line, set(needs) <= (curved if curves else set(pct))) for title, needs, curves, line in found]
    lines = [line() for _, line, ok in judged if ok]
    if skipped := [title for title, _, ok in judged if not ok]:
        lines.append(f"- not judged on {name} (their policies were not all run): " + "; ".join(skipped) + ".")
    return lines
