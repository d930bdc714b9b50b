"""Plots of simulated crawls: the impact curves of fetch orders against the ideal order, and each batch's choice
efficiency and discovery per cycle by each judge; a reference run (``crawl_metrics.ORACLES``) is drawn apart from the
policies. The repository's quality per cycle is plotted by :func:`crawlcycle.evaluation.repository.plot`.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from crawlcycle.evaluation.crawl_metrics import ORACLES, label
from crawlcycle.evaluation.ground_truth import JUDGES


def plot_regret(regrets: dict[str, pl.DataFrame], path: Path, title: str) -> None:
    """Choice efficiency and discovery per cycle by each judge, one line per run; a reference run dashed, and only
    under the judge whose true impact it orders by."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(JUDGES), figsize=(5 * len(JUDGES), 7), sharex=True, squeeze=False)
    palette = plt.get_cmap("tab10").colors
    for i, (name, regret) in enumerate(regrets.items()):
        reference = name in ORACLES.values()
        for col, judge in enumerate(JUDGES):
            if reference and ORACLES.get(judge) != name:
                continue
            rows = regret.filter(pl.col("judge") == judge)
            for row, figure in enumerate(("choice_efficiency", "discovery")):
                axes[row][col].plot(rows["cycle"], rows[figure], marker="o", markersize=3, label=label(name),
                                    color="dimgray" if reference else palette[i % 10],
                                    linestyle="--" if reference else "-")
    for col, judge in enumerate(JUDGES):
        axes[0][col].set_title(f"{title}: {judge} judge")
        if axes[0][col].get_legend_handles_labels()[0]:  # an oracle's own plot has nothing under the other judge
            axes[0][col].legend(fontsize="small")
        axes[1][col].set_xlabel("cycle (of the batch's fetch)")
        for row, text in enumerate(("choice efficiency (÷ best from its frontier)",
                                    "discovery (best from frontier ÷ best from all)")):
            axes[row][col].set_ylabel(text)
            axes[row][col].set_ylim(0, 1.05)
            axes[row][col].grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot(curves: dict[str, pl.DataFrame], path: Path, title: str) -> None:
    """Impact share against the fraction of pages fetched, for each policy and the ideal order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    longest = max(curves.values(), key=lambda c: c.height)
    ax.plot(longest["fraction"], longest["ideal"], color="black", linestyle="--", label="ideal")
    palette = plt.get_cmap("tab20").colors  # ten dark colours at even places, their light shades at odd ones
    for name, points in curves.items():  # the reference runs grey and dash-dotted, not one of the policies' colours
        if name in ORACLES.values():
            ax.plot(points["fraction"], points["policy"], label=label(name), color="dimgray", linestyle="-.",
                    linewidth=1.6 if name == ORACLES["reference"] else 1.0)
    for i, (name, points) in enumerate((n, p) for n, p in curves.items() if n not in ORACLES.values()):
        ax.plot(points["fraction"], points["policy"], label=name, color=palette[(2 * i) % 20 + (i // 10) % 2],
                linewidth=2.4 if name == "hybrid" else 1.3, linestyle="-" if i < 10 else ":")
    ax.set_xlabel("fraction of the snapshot's pages fetched")
    ax.set_ylabel("cumulative true impact share")
    ax.set_title(title)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(ncol=2, fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_panel(figures: list[dict], path: Path, title: str, goal: float) -> None:
    """Per judge of the panel, a policy's ratio of the means to the strongest rival held fixed at each budget
    (``policy_lab.held_fixed_figures``), with the lowest ratio in one run as a tick; lines at parity and ``goal``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    judges = list(dict.fromkeys(f["judge"] for f in figures))
    budgets = list(dict.fromkeys(f["budget"] for f in figures))
    fig, ax = plt.subplots(figsize=(1.6 * len(judges) + 3, 4.5))
    width = 0.8 / len(budgets)
    for i, budget in enumerate(budgets):
        at = {f["judge"]: f for f in figures if f["budget"] == budget}
        xs = [k + (i - (len(budgets) - 1) / 2) * width for k, j in enumerate(judges) if j in at]
        shown = [at[j] for j in judges if j in at]
        ax.bar(xs, [f["ratio"] for f in shown], width, label=f"{budget} of the pages (ratio of the means)")
        ax.scatter(xs, [f["lowest"] for f in shown], marker="_", s=200, color="black",
                   label="lowest ratio in a run" if i == 0 else None)
        for x, f in zip(xs, shown, strict=True):
            ax.annotate(f["rival"], (x, f["ratio"]), ha="center", va="bottom", fontsize="x-small")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(goal, color="firebrick", linestyle="--", linewidth=0.8, label=f"goal {goal:.2f}×")
    ax.set_xticks(range(len(judges)), judges)
    ax.set_ylabel("hybrid ÷ strongest rival held fixed")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
