"""The ordering policies, one entry each: the registry that settings, the score stage, a cycle's rollback, the DAG's
policy parameter and the policy table of the documentation read.

Kept light (the standard library only): settings and the DAG parser import it on every parse, so an entry names its
staging function as ``"module:function"``, imported only when the policy scores (``registry.stage_function``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)  # an entry of a registry


@dataclass(frozen=True)
class Policy:
    name: str
    description: str  # one line of Markdown: the documentation's policy table and the DAG's policy parameter
    stage: str = ""  # "module:function" staging the SQL's inputs and returning its parameters; empty: SQL alone
    owns: tuple[str, ...] = ()  # tables of state the policy writes by cycle: a cycle's rollback deletes its rows

    @property
    def sql(self) -> str:
        """The policy's SQL file, as ``db.statements`` names it: ``sql/ordering/policies/<name>.sql``."""
        return f"ordering/policies/{self.name}"


REGISTRY = (
    Policy("hybrid", "impact-driven: the expected impact of the page on the needy queries it may answer (each "
           "query's frequency times the odds the page enters its top K), mixed with the impact its PageRank and "
           "in-links predict", "crawlcycle.ordering.hybrid:stage_hybrid", ("sketches", "top_k_odds")),
    Policy("random", "uniform random order, reproducible from `random_seed` and the cycle"),
    Policy("bfs", "discovery order (breadth-first)"),
    Policy("indegree", "distinct pages linking in"),
    Policy("pagerank", "PageRank over crawled pages and frontier"),
    Policy("opic", "online page importance as Nutch computes it: fetched pages hand their cash on to their "
           "out-links; priority is cash plus history, kept in `opic_cash`", "crawlcycle.ordering.opic:stage_opic",
           ("opic_cash",)),
    Policy("rw", "a random walk whose steps from a crawled page are weighted by the impact searchers saw on it, "
           "Tran et al. (`rw_gamma`, `rw_epsilon`, `rw_damping`)", "crawlcycle.ordering.random_walk:stage_rw"),
    Policy("rw_eg", "the walk of `rw` over a graph enriched with virtual edges between co-cited pages, mixed by "
           "`rw_omega`", "crawlcycle.ordering.random_walk:stage_rw_eg"),
    Policy("q_overlap", "the summed frequency of every query of the partition whose n-grams the page's URL and "
           "anchors hold, times the share held: query matching without sketches or needy-query selection",
           "crawlcycle.ordering.query_overlap:stage_q_overlap"),
    Policy("q_hybrid", "the query overlap of `q_overlap` plus a decision tree, fitted on crawled pages, from PageRank "
           "to observed impact; weighted by the hybrid weights", "crawlcycle.ordering.query_overlap:stage_q_hybrid"),
    Policy("ml", "a decision tree over in-links, PageRank, `q_overlap`, `q_hybrid`, `rw` and `rw_eg` scores, "
           "trained on crawled pages to predict their observed impact, depth and leaf size chosen by 5-fold "
           "cross-validation (the folds' R² and the feature importances are in `model_runs`)",
           "crawlcycle.ordering.ml:stage_ml"),
)
NAMES = tuple(p.name for p in REGISTRY)
# Reference orderings: the simulator runs them beside the policies, to measure how much a policy leaves to win; a
# crawl cannot choose them (they read what only the simulator knows).
REFERENCE = (
    Policy("oracle", "the frontier by true impact (the simulator's ground truth, `oracle_impact`), undiscovered pages "
           "out of reach like for every policy; pages of no impact in discovery order",
           "crawlcycle.ordering.oracle:stage_oracle"),
)
REFERENCE_NAMES = tuple(p.name for p in REFERENCE)


def named(entries: tuple[T, ...], name: str, what: str = "policy") -> T:
    """The entry of ``entries`` named ``name`` (a ``what``)."""
    for entry in entries:
        if entry.name == name:
            return entry
    raise ValueError(f"unknown {what} {name!r}; choose one of {', '.join(e.name for e in entries)}")


def policy(name: str) -> Policy:
    """The entry named ``name``, a policy or a reference ordering."""
    return named(REGISTRY + REFERENCE, name)
