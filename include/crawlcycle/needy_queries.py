"""Needy queries: the share of the cycle's query-log partition whose results most need new pages.

neediness(q) = f(q) x improvability(q), improvability predicted from the average score of the query's
current top K (see ``improvability``). Until a fit exists, every query gets the ``improvability_prior``
setting, so neediness orders queries by frequency.
"""

from __future__ import annotations

import math
from datetime import date

import duckdb
import polars as pl

from crawlcycle.db import query
from crawlcycle.improvability import latest_fit
from crawlcycle.settings import Settings


def select_needy(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, partition: date) -> pl.DataFrame:
    """Replace and return the needy queries of ``cycle`` drawn from query-log ``partition``."""
    queries = query(con, "stages/needy_candidates", cycle=cycle, partition=partition)
    keep = min(settings.needy_max, math.ceil(settings.needy_share * queries.height))
    fitted = latest_fit(con, cycle)
    # at most K of a query's results can be new: the curve is capped there where it extrapolates upwards
    improvability = (fitted.predict(pl.col("avg_score")).clip(upper_bound=settings.top_k) if fitted
                     else pl.lit(settings.improvability_prior))
    needy = (queries.with_columns(improvability=improvability.cast(pl.Float64))
             .with_columns(neediness=pl.col("frequency") * pl.col("improvability"))
             .sort(["neediness", "query"], descending=[True, False])
             .head(keep)
             .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32)))
    con.execute("DELETE FROM needy_queries WHERE cycle = ?", [cycle])
    con.register("s_needy", needy)
    con.execute("INSERT INTO needy_queries SELECT ?, query, frequency, improvability, neediness, rank FROM s_needy",
                [cycle])
    con.unregister("s_needy")
    return needy
