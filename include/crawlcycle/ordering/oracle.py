"""The reference ordering ``oracle``: what a crawler that knew every page's true impact would fetch, bound by the
same rules as every policy (only URLs some fetched page links to, robots.txt, batch size, per-host cap, what each
fetch gives). The simulator writes the true impact (``oracle_impact``) and runs it beside the policies, so that
each policy's result can be read against what was within reach; a crawl cannot choose it (``Settings.validate``)."""

from __future__ import annotations

import duckdb

from crawlcycle.settings import Settings


def stage_oracle(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    """The temp table ``s_true_impact`` (url, impact, page) from the simulator's file (``Truth.impact``)."""
    con.execute("CREATE OR REPLACE TEMP TABLE s_true_impact AS SELECT url, impact, page FROM read_parquet(?)",
                [settings.oracle_impact])
    return {}
