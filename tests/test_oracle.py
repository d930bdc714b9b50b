"""The simulator's reference ordering oracle on a hand-built crawl state in a real DuckDB file: it takes the frontier
by true impact, within the rules every policy keeps (only known URLs, per-host cap), and no crawl can choose it."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from crawlcycle.db import connect
from crawlcycle.ordering import registry
from crawlcycle.pipeline import materialize
from tests.support.crawl_state import add_page, add_urls, new_state


def test_the_oracle_takes_known_urls_by_true_impact_then_in_discovery_order(tmp_path: Path) -> None:
    truth = tmp_path / "truth.parquet"
    pl.DataFrame({"url": ["http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/9",
                          "http://b.test/x", "http://a.test/undiscovered"],
                  "impact": [5.0, 9.0, 7.0, 1.0, 0.0, 100.0]}).with_columns(page=pl.col("url")).write_parquet(truth)
    s = new_state(tmp_path, "oracle", oracle_impact=str(truth), batch_size=4, per_host_cap=2)
    with connect(s) as con:
        add_urls(con, ["http://a.test/", "http://a.test/1", "http://a.test/2", "http://a.test/3",
                       "http://b.test/z", "http://b.test/x", "http://b.test/9"])
        add_page(con, "http://a.test/", "home", "the home page")  # fetched: never in a batch again
        # both origins have given pages: every URL may take a slot (the reachability rules are not the oracle's)
        con.execute("INSERT INTO path_yield (cycle, path_group, answered, pages, refused, held_tries) VALUES "
                    "(0, 'http://a.test/*', 1, 1, 0, 0), (0, 'http://b.test/*', 1, 1, 0, 0)")
        registry.score_frontier(con, s, 1)
        materialize.materialize(con, s, 1)
        batch = con.execute("SELECT url FROM batches WHERE fetch_cycle = 2 ORDER BY rank").fetchall()
    # a.test/2 and a.test/3 fill the host's two slots before a.test/1; b.test/9 has impact; of the pages of none,
    # the first discovered comes first
    assert [u for (u,) in batch] == ["http://a.test/2", "http://a.test/3", "http://b.test/9", "http://b.test/z"]
