"""Online page importance computation (OPIC, Abiteboul et al.), the order Nutch's OPIC scoring gives: policy
``opic``.

Every known URL holds cash, and the cash of all URLs sums to 1: the first cycle scored under ``opic`` gives each
known URL 1/n, and URLs found later start with none. Each cycle, the pages fetched since the previous scoring
pass their cash on: it is added to their history and split evenly among their out-links to known URLs (a page
without such links spreads it over every known URL, so no cash is lost). A URL's priority is its cash plus its
history.

The state lives in table ``opic_cash``: one row per URL whose cash or history the scoring of a cycle changed,
with the values after it; a URL's state is its newest row. A re-run of a cycle's scoring starts from the rows of
earlier cycles and replaces its own, so it writes the same state again.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import query, run_sql, scalar, staged
from crawlcycle.models.graph import known_graph
from crawlcycle.models.refit import record_model
from crawlcycle.settings import Settings


def distribute(cash: np.ndarray, history: np.ndarray, fetched: np.ndarray, src: np.ndarray,
               dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cash, history) after the ``fetched`` pages pass on their cash along edges src -> dst, all at once."""
    n = len(cash)
    given = np.zeros(n)
    given[fetched] = cash[fetched]
    out = np.bincount(src, minlength=n)
    flow = np.bincount(dst, weights=given[src] / out[src], minlength=n) if len(src) else np.zeros(n)
    spread = given[out == 0].sum() / max(n, 1)
    return cash - given + flow + spread, history + given


def stage_opic(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    """Update ``opic_cash`` for cycle ``cycle`` from the pages fetched since the previous scoring."""
    n, src, dst = known_graph(con)
    last = scalar(con, "SELECT max(cycle) FROM opic_cash WHERE cycle < ?", [cycle])
    state = query(con, "ordering/opic/opic_state", cycle=cycle)
    cash, history = np.zeros(n), np.zeros(n)
    if last is None:
        cash[:] = 1.0 / max(n, 1)
    ids = state["id"].to_numpy()
    cash[ids], history[ids] = state["cash"].to_numpy(), state["history"].to_numpy()
    had = np.zeros(n, dtype=bool)
    had[ids] = True
    since = batch_cycles(fetch=cycle)[0] if last is None else last
    fetched = query(con, "ordering/opic/opic_fetched", last=since, cycle=cycle)["id"].to_numpy().astype(np.int64)
    new_cash, new_history = distribute(cash, history, fetched, src, dst)
    changed = (new_cash != cash) | (new_history != history) | (~had & (new_cash > 0))
    with staged(con, s_opic=pl.DataFrame({"id": np.flatnonzero(changed), "cash": new_cash[changed],
                                          "history": new_history[changed]})):
        run_sql(con, "ordering/opic/opic_write", cycle=cycle)
    con.execute("DROP TABLE r_ids")
    record_model(con, cycle, "opic", ["links"], {
        "urls": n, "fetched": len(fetched), "rows": int(changed.sum()), "cash_total": float(new_cash.sum()),
        "history_total": float(new_history.sum())})
    return {}
