"""Fit the reference ranker to the user's engine: the settings under which its top K agrees most with the engine's
result lists (``crawlcycle fit-ranker``).

The engine's lists come from a results-log partition (:mod:`crawlcycle.ranking.results_log`). Only its results on
pages the crawl has indexed count: a page the crawl never fetched cannot be ranked by either. Agreement is the top-K
overlap: of those results, the share that the reference ranker's top K of the same query holds too.

The search runs on a copy of the crawl database, so the crawl is left as it was: coordinate ascent over the
analyzer (``ranker_stemmer``, ``ranker_stopwords``; a change re-indexes the copy), the field weights
(``bm25_weights`` of title, anchor and URL against the text), ``bm25_k1`` and ``prestige_weight``, each tried in turn
at every value of ``CANDIDATES`` with the others held, the best kept, for at most ``PASSES`` passes. The text the
ranker reads (setting ``extractor``) needs a new parse of every page, so it is not searched here.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from crawlcycle.contracts.errors import InputError
from crawlcycle.db import connect, migrate, scalar
from crawlcycle.ranking import ranker
from crawlcycle.ranking.results_log import latest_partition
from crawlcycle.settings import RANK_FIELDS, Settings
from crawlcycle.settings.sources import with_overrides

# The values tried for each searched setting; a field of bm25_weights is named by the field (text is not searched:
# the other weights are tried against it).
CANDIDATES: dict[str, tuple[Any, ...]] = {
    "ranker_stemmer": ("none", "english"),
    "ranker_stopwords": ("english", "none"),
    "title": (1.0, 2.0, 3.0, 5.0, 8.0),
    "anchor": (0.0, 1.0, 2.0, 4.0),
    "url": (0.0, 1.0, 2.0, 4.0),
    "bm25_k1": (0.6, 1.2, 2.0),
    "prestige_weight": (0.0, 0.25, 0.5, 1.0, 2.0),
}
PASSES = 2
SCRATCH_CYCLE = -1  # the copy's results of a trial: no real cycle has this number


@dataclass(frozen=True)
class Fit:
    """What the fit found: the partition read, the queries and results it compared, the overlap with the settings
    as they are and with the fitted ones, the fitted settings that differ, and the trials run."""

    day: date
    queries: int
    results: int  # the engine's results on pages the crawl indexed
    results_elsewhere: int  # on pages the crawl has not indexed: left out
    before: float
    after: float
    changed: dict[str, Any]
    trials: int


def fit_ranker(settings: Settings, day: date | None = None, max_queries: int = 2000,
               progress: Callable[[str], None] = print) -> Fit:
    """Fit the ranker settings to the results-log partition of ``day`` (default: the latest), over at most
    ``max_queries`` of its queries (a seeded sample), on a copy of the crawl database."""
    day, results = latest_partition(settings, day)
    with tempfile.TemporaryDirectory(dir=settings.data_dir, prefix="fit-ranker-") as tmp:
        copy = with_overrides(settings, {"db_path": str(_copy_database(settings, Path(tmp))),
                                         "data_dir": str(Path(tmp) / "data")}, source="fit-ranker")
        with connect(copy) as con:
            migrate(con)
            cycle = scalar(con, "SELECT max(cycle) FROM posting_docs")
            if cycle is None:
                raise InputError(f"setting db_path: {settings.db_path} has no indexed page yet: run a cycle first")
            indexed = con.sql("SELECT url FROM posting_docs").pl()
            on_indexed = results.join(indexed, on="url", how="semi")
            queries = sorted(on_indexed["query"].unique())
            if not queries:
                raise InputError(f"results log dt={day}: none of its results is a page the crawl has indexed")
            if len(queries) > max_queries:
                queries = sorted(random.Random(0).sample(queries, max_queries))
            theirs = (on_indexed.filter(pl.col("query").is_in(queries)).sort("query", "rank")
                      .with_columns(rank=pl.int_range(1, pl.len() + 1).over("query"))
                      .filter(pl.col("rank") <= settings.top_k).select("query", "url"))
            search = _Search(con, settings, cycle, queries, theirs, progress)
            before = search.overlap(search.start)
            best = search.ascend()
            return Fit(day, len(queries), theirs.height, results.height - on_indexed.height, before,
                       search.overlap(best), _changed(settings, search.settings(best)), search.trials)


def _copy_database(settings: Settings, folder: Path) -> Path:
    """A copy of the crawl database in ``folder``, taken while a read-only connection keeps writers out."""
    source = Path(settings.db_path)
    if not source.is_file():
        raise InputError(f"setting db_path: {source} does not exist (run `crawlcycle init` and a cycle first)")
    target = folder / source.name
    try:
        with duckdb.connect(str(source), read_only=True):
            for path in (source, source.with_name(source.name + ".wal")):
                if path.is_file():
                    shutil.copyfile(path, folder / path.name)
    except duckdb.IOException as e:
        raise InputError(f"setting db_path: {source} is held by a running cycle ({str(e).splitlines()[0]}); run "
                         "fit-ranker between cycles") from None
    return target


class _Search:
    """Coordinate ascent over ``CANDIDATES`` on the copy: each trial's overlap, kept by its point."""

    def __init__(self, con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, queries: list[str],
                 theirs: pl.DataFrame, progress: Callable[[str], None]) -> None:
        self.con, self.base, self.cycle, self.queries, self.theirs = con, settings, cycle, queries, theirs
        self.progress, self.seen, self.trials, self.analyzer = progress, {}, 0, None
        weights = settings.field_values("bm25_weights")
        self.start = {"ranker_stemmer": settings.ranker_stemmer, "ranker_stopwords": settings.ranker_stopwords,
                      **{f: weights[f] for f in RANK_FIELDS}, "bm25_k1": settings.bm25_k1,
                      "prestige_weight": settings.prestige_weight}

    def settings(self, point: dict[str, Any]) -> Settings:
        weights = ",".join(f"{f}={point[f]:g}" for f in RANK_FIELDS)
        return with_overrides(self.base, {"ranker_stemmer": point["ranker_stemmer"],
                                          "ranker_stopwords": point["ranker_stopwords"], "bm25_weights": weights,
                                          "bm25_k1": point["bm25_k1"], "prestige_weight": point["prestige_weight"]},
                              source="fit-ranker")

    def overlap(self, point: dict[str, Any]) -> float:
        key = tuple(sorted(point.items()))
        if key not in self.seen:
            settings = self.settings(point)
            analyzer = ranker.Analyzer.of(settings)
            if analyzer != self.analyzer:
                ranker.index_pages(self.con, self.cycle, analyzer)
                self.analyzer = analyzer
            ranker.rank_queries(self.con, settings, SCRATCH_CYCLE, self.queries)
            ours = self.con.sql(f"SELECT query, url FROM query_results WHERE cycle = {SCRATCH_CYCLE}").pl()
            self.seen[key] = ours.join(self.theirs, on=["query", "url"]).height / self.theirs.height
            self.trials += 1
            self.progress(f"fit-ranker: trial {self.trials}: " + ", ".join(f"{k}={v}" for k, v in point.items())
                          + f": top-{self.base.top_k} overlap {self.seen[key]:.3f}")
        return self.seen[key]

    def ascend(self) -> dict[str, Any]:
        best = dict(self.start)
        for _ in range(PASSES):
            moved = False
            for name, values in CANDIDATES.items():
                for value in values:
                    trial = {**best, name: value}
                    if self.overlap(trial) > self.overlap(best) + 1e-9:
                        best, moved = trial, True
            if not moved:
                break
        return best


def _changed(before: Settings, after: Settings) -> dict[str, Any]:
    """The searched settings whose fitted value differs from the settings as they were."""
    names = ("ranker_stemmer", "ranker_stopwords", "bm25_weights", "bm25_k1", "prestige_weight")
    same_weights = before.field_values("bm25_weights") == after.field_values("bm25_weights")
    return {n: getattr(after, n) for n in names
            if getattr(after, n) != getattr(before, n) and not (n == "bm25_weights" and same_weights)}
