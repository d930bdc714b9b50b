"""The refresh policies, one entry each: which fetched pages a batch fetches again, and how many of its slots they
take. The registry that settings, the score stage, materialize, the DAG's refresh_policy parameter and the docs'
refresh table read.

A refresh policy is chosen apart from the ordering policy (``contracts/policies.py``), which keeps ordering the new
URLs. Its SQL (``sql/ordering/refresh/policies/<name>.sql``) selects ``(url, host, value, first, parts)`` from the
temp table ``refresh_candidates`` (fetched pages not checked within ``min_revisit_cycles``); ``budget`` says how the
batch is divided between those and the new URLs (``crawlcycle.ordering.refresh.divide``):

- ``none``: no page is fetched again;
- ``due``: the pages the policy's SQL finds due go first, the new URLs fill the rest; nothing else is refreshed;
- ``quota``: ``refresh_budget`` of the batch goes to refreshes, by the policy's value; the new URLs fill the rest,
  and refreshes fill what the new URLs leave;
- ``value``: refreshes and new URLs compete for every slot by value, in one unit (expected search impact).

Standard library only, as ``contracts/policies.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlcycle.contracts.policies import named

BUDGETS = ("none", "due", "quota", "value")


@dataclass(frozen=True)
class RefreshPolicy:
    name: str
    description: str  # one line of Markdown: the docs' refresh table and the DAG's refresh_policy parameter
    budget: str  # one of BUDGETS

    @property
    def sql(self) -> str:
        """The policy's SQL file, as ``db.statements`` names it (none has none)."""
        return f"ordering/refresh/policies/{self.name}" if self.budget != "none" else ""


REGISTRY = (
    RefreshPolicy("impact", "the expected search impact a re-fetch recovers: P(changed since the last check) × the "
                  "impact the page carries in today's top K (rank-weighted) × the share of changes that moved a page "
                  "in or out of a top K; competes with the new URLs' expected impact for every slot; one probe per "
                  "host whose check tells whether the host changed since its latest; a page likely unchanged never "
                  "takes a slot no new URL wants", "value"),
    RefreshPolicy("none", "no page is fetched again (the crawl before refreshes)", "none"),
    RefreshPolicy("fixed", "every `fixed_revisit_cycles` cycles, due pages first (Nutch's default schedule)", "due"),
    RefreshPolicy("adaptive", "Nutch's AdaptiveFetchSchedule: the interval grows by `adaptive_inc_rate` after an "
                  "unmodified check and shrinks by `adaptive_dec_rate` after a modified one, within "
                  "`min_revisit_cycles` and `max_revisit_cycles`; due pages first", "due"),
    RefreshPolicy("uniform", "`refresh_budget` of the batch, the page checked longest ago first (Cho & "
                  "Garcia-Molina's uniform policy)", "quota"),
    RefreshPolicy("proportional", "`refresh_budget` of the batch, by estimated change rate × cycles since the check "
                  "(Cho & Garcia-Molina's proportional policy)", "quota"),
    RefreshPolicy("user_centric", "`refresh_budget` of the batch, by P(changed) × the rank-weighted impact the page "
                  "carries (Pandey & Olston 2005, user-centric crawling)", "quota"),
)
NAMES = tuple(p.name for p in REGISTRY)


def refresh_policy(name: str) -> RefreshPolicy:
    """The entry named ``name``."""
    return named(REGISTRY, name, "refresh policy")
