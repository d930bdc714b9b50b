"""Index epochs: the reference ranker's collection statistics held still from one full re-rank to the next.

BM25F reads the whole index in every score: the number of indexed pages N, each term's document frequency, each
field's average length, and, through the prestige prior, each page's PageRank and the number of known URLs. All of
them move a little with every page a cycle indexes, so with live statistics every stored result goes stale every
cycle and every query must be ranked again. Within an epoch (``index_epochs``) they hold still
(``sql/ranking/ranker/weights.sql`` reads the frozen ones): a page's score moves only when an index run writes the
page, so a cycle scores only the pages it wrote and merges them into the results it carries
(:func:`crawlcycle.ranking.ranker.rank_queries`). A term or field the epoch has not seen is counted when first indexed
and then holds too.

An epoch closes, and the next opens with the statistics of the index as it stands and every query ranked, when:
``first`` (none open), ``settings`` (the ranker's analyzer or score settings changed: stored scores read others),
``full`` (setting ``recompute = full``: every cycle), ``age`` (``epoch_cycles`` cycles) or ``drift``: each cycle
ranks ``epoch_sample`` of its queries under the epoch's statistics and under today's, and the share of top-K places
in which the two differ is the drift, what holding the statistics costs the order; above ``epoch_drift`` it closes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import duckdb

from crawlcycle.db import run_sql
from crawlcycle.settings import Settings


@dataclass(frozen=True)
class Epoch:
    epoch: int
    opened_cycle: int
    reason: str
    ranker: str | None


def ranker_key(settings: Settings, analyzer: str) -> str:
    """What stored scores depend on besides the index: the analyzer's key and the score's settings."""
    return json.dumps({"analyzer": analyzer, "k1": settings.bm25_k1, "weights": settings.bm25_weights,
                       "b": settings.bm25_b, "prestige_weight": settings.prestige_weight,
                       "perturb_seed": settings.perturb_seed}, sort_keys=True)


def open_epoch(con: duckdb.DuckDBPyConnection) -> Epoch | None:
    rows = con.execute("SELECT epoch, opened_cycle, reason, ranker FROM index_epochs WHERE closed_cycle IS NULL"
                       ).fetchall()
    return Epoch(*rows[0]) if rows else None


def reason_to_open(settings: Settings, epoch: Epoch | None, cycle: int, key: str) -> str | None:
    """Why cycle ``cycle`` opens an epoch before any drift is measured, or None: the epoch goes on unless it drifted."""
    if epoch is None:
        return "first"
    if epoch.opened_cycle >= cycle:  # an earlier run of this cycle opened it: this run opens it again, alike
        return epoch.reason
    if epoch.ranker != key:
        return "settings"
    if settings.recompute == "full":
        return "full"
    return None


def begin(con: duckdb.DuckDBPyConnection, cycle: int, reason: str, key: str, drift: float | None) -> None:
    """Open an epoch at ``cycle``: the index's statistics as they stand now are those every score reads."""
    run_sql(con, "ranking/ranker/epoch_open", cycle=cycle, reason=reason, ranker=key, drift=drift)


def sample(queries: list[str], size: int) -> list[str]:
    """The ``size`` queries the drift is measured on: the same whatever order the log lists them in."""
    return sorted(sorted(set(queries), key=lambda q: hashlib.blake2b(q.encode(), digest_size=8).digest())[:size])
