"""Regret of a simulated crawl's batches on hand-built crawl states in a real DuckDB file: the best batch from the
frontier and from every unfetched page, greedy by true impact under the per-host cap, the policy's choice efficiency
and discovery (v_batch_regret), and the better URLs it passed over."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import polars as pl
import pytest

from crawlcycle.db import connect
from crawlcycle.evaluation.crawl_metrics import batch_regret
from crawlcycle.evaluation.ground_truth import JUDGES, Truth
from crawlcycle.ordering import registry
from crawlcycle.pipeline import materialize
from tests.support.crawl_state import DAY, add_page, add_urls, new_state

# The snapshot's pages by true impact (the same for both judges): a.test/ was fetched in cycle 1; a.test/5 and
# c.test/1 are linked from no page fetched yet.
IMPACT = {"http://a.test/": 50.0, "http://a.test/1": 1.0, "http://a.test/2": 9.0, "http://a.test/3": 8.0,
          "http://a.test/4": 7.0, "http://b.test/1": 2.0, "http://b.test/2": 0.0, "http://a.test/5": 30.0,
          "http://c.test/1": 20.0}


def _regret(tmp_path: Path, policy: str, robots_txt: str | None = None, impact: dict[str, float] = IMPACT,
            frontier: tuple[str, ...] = ()) -> tuple[pl.DataFrame, list[tuple]]:
    """Cycle 1 of ``policy`` chooses the batch of cycle 2 (3 URLs, at most 2 per host) from the frontier
    a.test/1-4, b.test/1-2 (found in that order) and ``frontier``; cycle 2 fetched it. Its regret by the reference
    judge, and the URLs it passed over. ``robots_txt``: a.test's stored robots.txt (none: everything allowed);
    ``impact``: the snapshot's pages by true impact."""
    pages = pl.DataFrame({"url": list(impact), "host": [u.split("/")[2] for u in impact],
                          **{Truth.column(j): list(impact.values()) for j in JUDGES}})
    truth = Truth(pages, set(), pl.DataFrame(), tmp_path / "truth")
    truth.folder.mkdir()
    truth.impact("reference").write_parquet(truth.impact_file("reference"))
    s = new_state(tmp_path, policy, oracle_impact=str(truth.impact_file("reference")), batch_size=3, per_host_cap=2)
    with connect(s) as con:
        add_urls(con, ["http://a.test/", *(f"http://a.test/{i}" for i in range(1, 5)), "http://b.test/1",
                       "http://b.test/2", *frontier])
        add_page(con, "http://a.test/", "home", "the home page")
        if robots_txt is not None:
            con.execute("INSERT INTO robots (origin, host, status, robots_txt) "
                        "VALUES ('http://a.test', 'a.test', 200, ?)", [robots_txt])
        # both origins have given pages: every URL may take a slot
        con.execute("INSERT INTO path_yield (cycle, path_group, answered, pages, refused, held_tries) VALUES "
                    "(0, 'http://a.test/*', 1, 1, 0, 0), (0, 'http://b.test/*', 1, 1, 0, 0)")
        registry.score_frontier(con, s, 1)
        materialize.materialize(con, s, 1)
        con.execute("INSERT INTO cycles (cycle, interval_start, policy, status) VALUES (2, ?, ?, 'closed')",
                    [DAY + timedelta(days=1), policy])
    regret = batch_regret(s, truth).filter(pl.col("judge") == "reference", pl.col("cycle") == 2)
    with connect(s, read_only=True) as con:
        passed = con.execute("SELECT p.url, p.impact, p.frontier_rank FROM v_batch_regret r, unnest(r.passed_over) "
                             "t(p) WHERE r.cycle = 2 AND r.judge = 'reference'").fetchall()
    return regret, passed


def test_the_best_batches_are_greedy_by_true_impact_under_the_per_host_cap(tmp_path: Path) -> None:
    regret, _ = _regret(tmp_path, "oracle")
    # from the frontier: a.test/2 and a.test/3 fill a.test's two slots (a.test/4 is left out), then b.test/1;
    # from every unfetched page: a.test/5 and a.test/2, then c.test/1 (a.test/ was fetched before this batch)
    assert regret.select("slots", "best_frontier", "best_all").row(0) == (3, 9 + 8 + 2, 30 + 9 + 20)


def test_the_oracle_chooses_the_best_batch_of_its_own_frontier(tmp_path: Path) -> None:
    regret, passed = _regret(tmp_path, "oracle")
    row = regret.row(0, named=True)
    assert (row["chosen"], row["choice_efficiency"]) == (19, 1.0) and passed == []
    assert row["discovery"] == pytest.approx(19 / 59)


def test_a_policy_that_picks_worse_urls_has_its_choice_efficiency_and_the_urls_it_passed_over(tmp_path: Path) -> None:
    regret, passed = _regret(tmp_path, "bfs")
    row = regret.row(0, named=True)
    # breadth-first takes a.test/1 and a.test/2 (found first; the per-host cap), then b.test/1: 1 + 9 + 2
    assert row["chosen"] == 12 and row["choice_efficiency"] == pytest.approx(12 / 19)
    assert row["discovery"] == pytest.approx(19 / 59)  # the frontier is the same as the oracle's
    assert passed == [("http://a.test/3", 8.0, 3)]  # third in breadth-first order, behind a.test/1 and a.test/2


def test_pages_robots_txt_disallows_are_in_no_best_batch(tmp_path: Path) -> None:
    regret, passed = _regret(tmp_path, "oracle", "User-agent: *\nDisallow: /2\nDisallow: /5\n")
    row = regret.row(0, named=True)
    # a.test/2 (9) and a.test/5 (30) may take no slot: from the frontier a.test/3, a.test/4 and b.test/1; from every
    # unfetched page c.test/1, a.test/3 and a.test/4. The oracle, which skips the disallowed URL too, lost nothing.
    assert (row["best_frontier"], row["best_all"]) == (8 + 7 + 2, 20 + 8 + 7)
    assert (row["chosen"], row["choice_efficiency"]) == (17, 1.0) and passed == []


def test_a_directory_url_is_worth_its_index_page_while_that_page_is_not_fetched(tmp_path: Path) -> None:
    # the snapshot server redirects b.test/guide/ and b.test/guide to the page b.test/guide/index.html (40); a.test's
    # index page is a.test/ itself, fetched in cycle 1, so a.test/index.html's directory is worth nothing now
    impact = {**IMPACT, "http://b.test/guide/index.html": 40.0}
    regret, passed = _regret(tmp_path, "oracle", impact=impact, frontier=("http://b.test/guide/", "http://b.test/guide"))
    row = regret.row(0, named=True)
    # the oracle sees through one directory URL to the page, and spends no second slot on the other: the page, then
    # a.test/2 and a.test/3 (a.test's two slots)
    assert (row["chosen"], row["best_frontier"], row["choice_efficiency"]) == (40 + 9 + 8, 40 + 9 + 8, 1.0)
    assert row["best_all"] == 40 + 30 + 20  # the page counts once among every unfetched page: as itself
    assert passed == []
    truth = Truth(pl.DataFrame({"url": list(impact), "host": [u.split("/")[2] for u in impact],
                                "impact": list(impact.values())}), set(), pl.DataFrame())
    assert truth.aliases().rows() == [("http://b.test/guide", "http://b.test/guide/index.html"),
                                      ("http://b.test/guide/", "http://b.test/guide/index.html")]
