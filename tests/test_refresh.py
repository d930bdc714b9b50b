"""Refreshes: the change-rate estimate, the refresh policies' choices and the batch divided between new URLs and stored
pages fetched again, on crawl states built by hand in real DuckDB files (page_checks rows written as a fetch's update
would)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.contracts.refresh_policies import NAMES, REGISTRY
from crawlcycle.db import SQL_DIR, connect, run_sql, statements
from crawlcycle.ordering import refresh, registry
from crawlcycle.pipeline import update
from crawlcycle.pipeline.materialize import materialize
from crawlcycle.ranking import ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from crawlcycle.ui.report import print_report
from tests.support.crawl_state import DAY, add_urls, new_state
from tests.support.demo import USER_AGENT

NOW = 20  # the cycle whose score and materialize stages choose the batch of cycle NOW + 1


def state(tmp_path: Path, refresh_policy: str, **overrides: object) -> Settings:
    """A crawl state scored by bfs (new URLs in discovery order) at cycle NOW, under ``refresh_policy``."""
    s = replace(new_state(tmp_path, "bfs", refresh_policy=refresh_policy,
                          **{"batch_size": 4, "per_host_cap": 10, **overrides}), policy="bfs")
    with connect(s) as con:
        con.execute("INSERT INTO cycles (cycle, interval_start, policy, status, settings) "
                    "VALUES (?, ?, 'bfs', 'running', ?)", [NOW, DAY + timedelta(days=NOW - 1), json.dumps(s.record())])
    return s


def stored(con: duckdb.DuckDBPyConnection, url: str, since: int, checks: tuple[bool, ...] = (), gap: int = 1) -> None:
    """A fetched page last fetched or checked ``since`` cycles before the next fetch (cycle NOW + 1), after
    ``checks`` (True: it had changed) ``gap`` cycles apart."""
    checked, host = NOW + 1 - since, url.split("/")[2]
    add_urls(con, [url])
    con.execute("INSERT INTO pages (url, host, cycle, status, title, text, content_hash, checked_cycle, changed_cycle) "
                "VALUES (?, ?, ?, 200, 'a page', 'its text', ?, ?, ?)",
                [url, host, checked - gap * len(checks), url, checked, checked])
    con.execute("UPDATE frontier SET status = 'fetched', status_cycle = ? WHERE url = ?", [checked, url])
    for c, changed in zip(range(checked - gap * (len(checks) - 1), checked + 1, gap), checks, strict=True):
        con.execute("INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed) "
                    "VALUES (?, ?, ?, ?, 200, ?, ?)", [c, url, host, "changed" if changed else "unchanged", c - gap,
                                                       changed])


def new(con: duckdb.DuckDBPyConnection, url: str, pagerank: float = 0.0) -> None:
    """A frontier URL not fetched yet, whose expected impact is its prestige-based impact: with no fit yet, its
    PageRank x the URLs known."""
    add_urls(con, [url])
    con.execute("UPDATE frontier SET pagerank = ? WHERE url = ?", [pagerank, url])
    # its path group gave a page before: its URLs take slots as any proven origin's
    con.execute("INSERT INTO path_yield VALUES (1, url_path_group(?), 1, 1, 0, NULL, 0, NULL) ON CONFLICT DO NOTHING",
                [url])


def shown(con: duckdb.DuckDBPyConnection, query: str, frequency: float, urls: list[str], cycle: int = NOW) -> None:
    """``query`` asked ``frequency`` times in cycle ``cycle``'s partition, its reference top K ``urls``."""
    con.execute("INSERT INTO query_log (partition, query, frequency) SELECT interval_start, ?, ? FROM cycles "
                "WHERE cycle = ?", [query, frequency, cycle])
    con.executemany("INSERT INTO query_results VALUES (?, ?, ?, ?, 1.0, 'reference')",
                    [(cycle, query, rank, url) for rank, url in enumerate(urls, 1)])


def choose(s: Settings) -> pl.DataFrame:
    """The batch of cycle NOW + 1 as the score and materialize stages of cycle NOW choose it."""
    with connect(s) as con:
        registry.score_frontier(con, s, NOW)
        materialize(con, s, NOW)
        return con.sql("SELECT url, kind, rank, why, p_changed, change_rate, rate_pooling, carried_impact, "
                       "moving_share, expected_impact, impact_calibration FROM v_batch_explain WHERE fetch_cycle = ? "
                       "ORDER BY rank",
                       params=[NOW + 1]).pl()


def freshness(s: Settings) -> dict[str, dict]:
    with connect(s) as con:
        rows = con.sql("SELECT * FROM page_freshness(?, ?::JSON)",
                       params=[NOW + 1, json.dumps(s.section("refresh"))]).pl()
    return {r["url"]: r for r in rows.iter_rows(named=True)}


# -- the change-rate estimate ----------------------------------------------------------------------------------------


def test_the_estimator_gives_cho_and_garcia_molina_s_rate_per_cycle(tmp_path: Path) -> None:
    with connect(state(tmp_path, "impact")) as con:
        def rate(n: int, x: int, gap: float) -> float:
            return con.execute("SELECT change_rate(?, ?, ?)", [n, x, gap]).fetchall()[0][0]

        assert rate(10, 3, 1) == pytest.approx(-math.log(7.5 / 10.5))  # 0.336 changes per check interval
        assert rate(10, 3, 2) == pytest.approx(-math.log(7.5 / 10.5) / 2)  # per cycle: checks two cycles apart
        assert rate(4, 4, 1) == pytest.approx(math.log(9))  # every check found a change: finite, ln(2n + 1)
        assert rate(5, 0, 3) == 0


def test_a_page_s_rate_is_pooled_over_its_path_group_and_host_while_it_has_few_checks(tmp_path: Path) -> None:
    s = state(tmp_path, "impact", refresh_prior_weight=4.0, change_rate_prior=0.1, change_model="poisson")
    with connect(s) as con:
        stored(con, "http://a.test/docs/many", 2, (True, False) * 5)          # 10 checks of its own
        stored(con, "http://a.test/docs/two", 2, (True, True), gap=2)        # 2 checks, 2 cycles apart
        stored(con, "http://a.test/docs/none", 3)                            # a group with 12 checks
        stored(con, "http://a.test/blog/none", 3)                            # only the host's 12 checks
        stored(con, "http://b.test/none", 4)                                 # nothing: the prior
    f = freshness(s)
    w, prior = 4.0, 0.1

    def pooled(n: int, x: int, gap: float, above: float) -> float:
        return (n * -math.log((n - x + 0.5) / (n + 0.5)) / gap + w * above) / (n + w)

    host = pooled(12, 7, 14 / 12, prior)  # the host's checks: ten 1 apart, two 2 apart
    group = pooled(12, 7, 14 / 12, host)  # the same checks: one path group
    assert f["http://a.test/docs/many"]["change_rate"] == pytest.approx(pooled(10, 5, 1, group))
    assert f["http://a.test/docs/two"]["change_rate"] == pytest.approx(pooled(2, 2, 2, group))
    assert f["http://a.test/docs/none"]["change_rate"] == pytest.approx(group)
    assert f["http://a.test/blog/none"]["change_rate"] == pytest.approx(pooled(0, 0, 1, host))
    assert f["http://b.test/none"]["change_rate"] == pytest.approx(prior)
    assert {u: r["pooling"] for u, r in f.items()} == {
        "http://a.test/docs/many": "page", "http://a.test/docs/two": "path_group",
        "http://a.test/docs/none": "path_group", "http://a.test/blog/none": "host", "http://b.test/none": "prior"}
    # P(changed) grows with the cycles since the last check
    assert f["http://b.test/none"]["p_changed"] == pytest.approx(1 - math.exp(-prior * 4))
    assert (f["http://b.test/none"]["checks"], f["http://a.test/docs/many"]["checks"],
            f["http://a.test/docs/many"]["changes"]) == (0, 10, 5)


def test_v_page_freshness_reads_the_refresh_settings_of_the_latest_cycle(tmp_path: Path) -> None:
    s = state(tmp_path, "fixed", fixed_revisit_cycles=5, change_model="poisson")
    with connect(s) as con:
        stored(con, "http://a.test/p", 3, (False, True))
        row = con.sql("SELECT * FROM v_page_freshness").pl().row(0, named=True)
    assert (row["last_fetched"], row["last_changed"], row["checks"], row["changes"]) == (NOW - 2, NOW - 2, 2, 1)
    assert row["next_due"] == NOW - 2 + 5 and row["why"] == "every 5 cycles (fixed)"
    assert row["p_changed"] == pytest.approx(1 - math.exp(-row["change_rate"] * 3))


def test_the_moving_share_ranks_the_replaced_copy_in_the_index_of_its_check(tmp_path: Path) -> None:
    s = state(tmp_path, "impact", moving_share_prior=0.2, refresh_prior_weight=4.0, top_k=2)
    doc = "http://a.test/p0"
    old, new = "apples apples orchard juice", "bananas bananas smoothie juice"

    def w(rank: int) -> float:  # view_weight in a top 2
        return 2 * rank ** -1.5 / (1 + 2 ** -1.5)

    with connect(s) as con:
        con.execute("INSERT INTO cycles (cycle, interval_start, policy, status) VALUES (5, ?, 'bfs', 'done'), "
                    "(6, ?, 'bfs', 'done')", [DAY + timedelta(days=4), DAY + timedelta(days=5)])
        add_urls(con, [doc, "http://a.test/p1", "http://a.test/p2", "http://a.test/g1", "http://a.test/g2"])
        for url, text in ((doc, old), ("http://a.test/p1", "apples pie crust recipe easy"),
                          ("http://a.test/p2", "bananas split cake recipe easy")):
            con.execute("INSERT INTO pages (url, host, cycle, status, title, text, content_hash) "
                        "VALUES (?, 'a.test', 5, 200, 'page', ?, ?)", [url, text, text])
        for query, frequency in (("apples", 1), ("bananas", 1), ("orchard", 1), ("juice", 2)):
            con.execute("INSERT INTO query_log (partition, query, frequency) SELECT interval_start, ?, ? FROM cycles "
                        "WHERE cycle IN (5, 6)", [query, frequency])
        ranker.index_pages(con, 5)
        ranker.rank_queries(con, s, 5)
        assert refresh.record_moves(con, s, 6) == 0 and refresh.moving_share(con, s, NOW) == pytest.approx(0.2)
        # cycle 6: the page's check finds another text, and two pages on orchards join the index
        con.execute("INSERT INTO replaced_pages BY NAME SELECT *, 6 AS replaced_cycle FROM pages WHERE url = ?", [doc])
        con.execute("INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed) "
                    "VALUES (6, ?, 'a.test', 'changed', 200, 5, true)", [doc])
        con.execute("UPDATE pages SET text = ?, content_hash = ?, cycle = 6 WHERE url = ?", [new, new, doc])
        con.execute("INSERT INTO pages (url, host, cycle, status, title, text, content_hash) "
                    "VALUES (?, 'a.test', 6, 200, 'page', 'orchard orchard', 'g1'), "
                    "(?, 'a.test', 6, 200, 'page', 'orchard orchard', 'g2')", ["http://a.test/g1", "http://a.test/g2"])
        ranker.index_pages(con, 6)
        ranker.rank_queries(con, s, 6)
        results = {q: urls for q, urls in con.execute(
            "SELECT query, list(url ORDER BY rank) FROM query_results WHERE cycle = 6 GROUP BY query").fetchall()}
        assert results["bananas"][0] == doc and doc not in results["apples"] + results["orchard"]
        # a copy like the indexed one scores as the ranker scored it
        same = ranker.copy_scores(con, s, pl.DataFrame({"url": [doc], "title": ["page"], "text": [new]}),
                                  pl.DataFrame({"query": ["bananas", "juice"], "url": [doc, doc]}))
        assert same.rows() == con.execute("SELECT query, url, score FROM query_results WHERE cycle = 6 AND url = ? "
                                          "ORDER BY query", [doc]).fetchall()
        assert refresh.record_moves(con, s, 6) == 1
        row = con.execute("SELECT queries, carried, moved FROM check_moves WHERE cycle = 6 AND url = ?",
                          [doc]).fetchall()[0]
        # the old copy would still be first for apples (it left: moved) and juice (it stays); the new one is first
        # for bananas (it entered: moved); orchard's top 2 went to the new pages, which the old copy would not beat
        # either: the crawl's growth, not the page's change, and it moves nothing
        assert row[0] == 4
        assert row[1:] == pytest.approx((w(1) + 2 * w(1), w(1) + w(1)))
        assert refresh.moving_share(con, s, NOW) == pytest.approx((2 / 3 + 4 * 0.2) / (1 + 4))
        # no check yet at cycle 5: the prior
        assert refresh.moving_share(con, s, 5) == pytest.approx(0.2)


def test_p_changed_follows_the_host_s_checks_since_the_page_s_own(tmp_path: Path) -> None:
    s = state(tmp_path, "impact", refresh_prior_weight=2.0, change_rate_prior=0.1, change_model="poisson")
    with connect(s) as con:
        stored(con, "http://a.test/old", 6)                      # fetched before the release
        for i in range(3):                                        # the release: three checked since, all changed
            stored(con, f"http://a.test/released-{i}", 1, (True,), gap=5)
        stored(con, "http://b.test/old", 6)
        for i in range(4):                                        # b.test's checks since came back unchanged
            stored(con, f"http://b.test/same-{i}", 1, (False,), gap=4)
        stored(con, "http://c.test/old", 6)                       # no check since: the rate alone
    f = freshness(s)
    by_rate = {h: 1 - math.exp(-f[f"http://{h}/old"]["change_rate"] * 6) for h in ("a.test", "b.test", "c.test")}
    assert (f["http://a.test/old"]["sibling_checks"], f["http://a.test/old"]["sibling_changes"]) == (3, 3)
    assert f["http://a.test/old"]["p_changed"] == pytest.approx((3 + 2 * by_rate["a.test"]) / (3 + 2))
    assert f["http://b.test/old"]["p_changed"] == pytest.approx(2 * by_rate["b.test"] / (4 + 2))
    assert f["http://a.test/old"]["p_changed"] > by_rate["a.test"] and f["http://b.test/old"]["p_changed"] < 0.1
    assert f["http://c.test/old"]["p_changed"] == pytest.approx(by_rate["c.test"]) == 1 - math.exp(-0.1 * 6)
    # the released pages were checked after each other's previous fetch: they count each other, not themselves
    assert f["http://a.test/released-0"]["sibling_checks"] == 0


def test_bursts_a_release_seen_makes_older_copies_likely_changed_and_newer_ones_fresh(tmp_path: Path) -> None:
    """A host's release, seen by three checks in cycle 15, tells P(changed) of its pages by when their copy was made:
    a copy older than the release is likely changed (the release's share), one made after it is fresh but for a
    release not seen yet, where the Poisson rate reads the release as a change per cycle for every page."""
    w, prior = 2.0, 0.1
    s = state(tmp_path, "impact", refresh_prior_weight=w, change_rate_prior=prior)
    assert s.change_model == "bursts"
    with connect(s) as con:
        stored(con, "http://a.test/old", 10)                             # copy of cycle 11: before the release
        stored(con, "http://a.test/straddles", 8)                        # copy of cycle 13
        for i in range(3):                                                # checked in cycle 15 (copies of 11): changed
            stored(con, f"http://a.test/released-{i}", 6, (True,), gap=4)
        stored(con, "http://a.test/kept", 6, (False,), gap=4)             # checked in 15 too: the release spared it
        stored(con, "http://a.test/late", 5, (True,), gap=8)              # copy of 8 checked in 16: the same release
        for i in range(4):                                                # checked in 18 (copies of 16): unchanged
            stored(con, f"http://a.test/after-{i}", 3, (False,), gap=2)
        stored(con, "http://a.test/news", 1, (True,) * 4, gap=1)          # changed in 17..20, alone each time
        stored(con, "http://b.test/page", 5)                              # a host never checked: the prior
        stored(con, "http://c.test/one", 9, (True,), gap=4)              # copy of 8 changed in 12: an event
        stored(con, "http://c.test/two", 7, (True,), gap=5)              # copy of 9 changed in 14: the same one
        stored(con, "http://c.test/three", 5, (True,), gap=3)            # copy of 13 changed in 16: another
    f = freshness(s)
    assert f["http://c.test/one"]["host_events"] == 2
    share = (4 + w * 0.5) / (5 + w)                       # of the 5 checks whose window spans it, 4 changed
    assert f["http://a.test/old"]["host_events"] == 1     # the late check's window (8, 16] holds the release of 15
    rate = (1 + w * prior) / ((NOW + 1 - 8) + w)          # one event over the cycles since the first checked copy
    unseen = 1 - math.exp(-rate * (NOW + 1 - 18))         # an event since the host's last check (cycle 18)
    assert f["http://a.test/old"]["p_bursts"] == pytest.approx(share)
    # the changed checks replaced copies of cycle 11: the release came in 12..15, for a copy of 13 half of it after
    assert f["http://a.test/straddles"]["p_bursts"] == pytest.approx(share * (1 - (1 - 2 / 4) * (1 - unseen)))
    for fresh in ("after-0", "released-0", "kept"):
        assert f[f"http://a.test/{fresh}"]["p_bursts"] == pytest.approx(share * unseen)
        assert f[f"http://a.test/{fresh}"]["p_poisson"] > 3 * f[f"http://a.test/{fresh}"]["p_bursts"]
    assert f["http://a.test/after-0"]["p_changed"] == f["http://a.test/after-0"]["p_bursts"]
    # the news page changes on its own: its rate weighs 4 / (4 + w), and its changes are not the host's events
    news = f["http://a.test/news"]
    assert (news["solo_changes"], news["host_events"]) == (4, 1)
    assert news["p_bursts"] == pytest.approx(4 / (4 + w) * (1 - math.exp(-math.log(9))) + w / (4 + w) * share
                                             * (1 - math.exp(-rate)))
    assert f["http://b.test/page"]["p_bursts"] == pytest.approx(0.5 * (1 - math.exp(-prior * 5)))


# -- the rivals --------------------------------------------------------------------------------------------------------


def test_fixed_refreshes_only_the_pages_due_every_n_cycles_and_first(tmp_path: Path) -> None:
    s = state(tmp_path, "fixed", fixed_revisit_cycles=5, batch_size=6)
    with connect(s) as con:
        for since in (3, 5, 7):
            stored(con, f"http://a.test/since-{since}", since)
        for i in range(2):
            new(con, f"http://b.test/new-{i}")
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/since-7", "http://a.test/since-5", "http://b.test/new-0",
                                      "http://b.test/new-1"]  # slots left empty: nothing else is due
    assert batch["kind"].to_list() == ["refresh", "refresh", "new", "new"]
    assert batch["why"][0] == "refresh: due: every 5 cycles (fixed), checked 7 cycles ago"


def test_adaptive_lengthens_the_interval_after_unmodified_checks_and_shortens_it_after_modified(
        tmp_path: Path) -> None:
    s = state(tmp_path, "adaptive", fixed_revisit_cycles=10, min_revisit_cycles=1, max_revisit_cycles=90)
    with connect(s) as con:
        stored(con, "http://a.test/steady", 8, (False, False))        # 10 x 1.4^2 = 19.6
        stored(con, "http://a.test/busy", 8, (True, True))            # 10 x 0.8^2 = 6.4
        stored(con, "http://a.test/hectic", 8, (True,) * 12)          # 10 x 0.8^12 < 1: min_revisit_cycles
        stored(con, "http://a.test/still", 8, (False,) * 20)          # 10 x 1.4^20 > 90: max_revisit_cycles
        stored(con, "http://a.test/new-page", 8)                      # no check yet: fixed_revisit_cycles
    f = freshness(s)
    assert {u.rsplit("/", 1)[1]: r["adaptive_interval"] for u, r in f.items()} == pytest.approx(
        {"steady": 19.6, "busy": 6.4, "hectic": 1.0, "still": 90.0, "new-page": 10.0})
    assert f["http://a.test/busy"]["next_due"] == NOW + 1 - 8 + 7
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/hectic", "http://a.test/busy"]  # most overdue for its interval


def test_uniform_takes_its_budget_oldest_check_first_and_fills_what_new_urls_leave(tmp_path: Path) -> None:
    s = state(tmp_path, "uniform", refresh_budget=0.5, batch_size=4)
    with connect(s) as con:
        for since in (2, 9, 4):
            stored(con, f"http://a.test/since-{since}", since, (True,) * since)
        for i in range(3):
            new(con, f"http://b.test/new-{i}")
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/since-9", "http://a.test/since-4", "http://b.test/new-0",
                                      "http://b.test/new-1"]
    with connect(s) as con:
        con.execute("UPDATE frontier SET status = 'gone' WHERE url LIKE 'http://b.test/%'")
    assert choose(s)["url"].to_list() == ["http://a.test/since-9", "http://a.test/since-4", "http://a.test/since-2"]


def test_proportional_orders_by_rate_times_cycles_since_the_check(tmp_path: Path) -> None:
    s = state(tmp_path, "proportional", refresh_budget=0.25, batch_size=4, refresh_prior_weight=0.01)
    with connect(s) as con:
        stored(con, "http://fast.test/p", 2, (True, True, True))        # ln 7 a cycle, 2 cycles ago
        stored(con, "http://slow.test/p", 6, (False,) * 4)              # none seen, 6 cycles ago
        new(con, "http://b.test/new-0")
    batch = choose(s)
    assert batch["url"].to_list() == ["http://fast.test/p", "http://b.test/new-0", "http://slow.test/p"]
    assert batch["change_rate"][0] == pytest.approx(math.log(7), rel=1e-2)
    assert batch["why"][0].startswith("refresh: rate 1.94")


def test_user_centric_spends_a_fixed_budget_by_p_changed_times_carried_impact(tmp_path: Path) -> None:
    s = state(tmp_path, "user_centric", refresh_budget=0.25, batch_size=4)
    with connect(s) as con:
        for name in ("top", "second", "third"):
            stored(con, f"http://a.test/{name}", 5, (True, True))
        shown(con, "q", 100, ["http://a.test/third", "http://a.test/top"])
        shown(con, "r", 300, ["http://a.test/top"])
        for i in range(3):
            new(con, f"http://b.test/new-{i}")
    batch = choose(s)
    # one refresh slot (a quarter of 4), however much the stored pages carry
    assert batch["url"].to_list() == ["http://a.test/top", "http://b.test/new-0", "http://b.test/new-1",
                                      "http://b.test/new-2"]
    w2 = 10 * 2 ** -1.5 / sum(i ** -1.5 for i in range(1, 11))  # rank 2 of a top 10
    assert batch["carried_impact"][0] == pytest.approx(100 * w2 + 300 * 10 / sum(i ** -1.5 for i in range(1, 11)))


# -- impact: one batch divided by value -----------------------------------------------------------------------------


def impact_state(tmp_path: Path, **overrides: object) -> Settings:
    """Two stored pages, one carrying much impact and changing often, one static; two new URLs, one strong, one
    weak (their expected impact: PageRank x the 6 known URLs); no changed check judged yet, so the moving share is
    its prior, here 0.5."""
    s = state(tmp_path, "impact", **{"batch_size": 2, "moving_share_prior": 0.5, **overrides})
    with connect(s) as con:
        stored(con, "http://a.test/hot", 2, (True,) * 6)
        stored(con, "http://a.test/static", 2, (False,) * 6)
        stored(con, "http://a.test/quiet", 2)
        stored(con, "http://a.test/unseen", 2)
        shown(con, "q", 50, ["http://a.test/hot", "http://a.test/static"])
        new(con, "http://b.test/strong", pagerank=5.0)   # expected impact 30
        new(con, "http://b.test/weak", pagerank=0.05)    # expected impact 0.3
    return s


def test_impact_refreshes_a_changing_page_with_impact_before_a_weak_new_url_and_takes_a_strong_new_url_before_a_static_page(  # noqa: E501
        tmp_path: Path) -> None:
    batch = choose(impact_state(tmp_path))
    assert batch["url"].to_list() == ["http://a.test/hot", "http://b.test/strong"]
    hot, strong = batch.row(0, named=True), batch.row(1, named=True)
    assert hot["kind"] == "refresh" and strong["kind"] == "new"
    assert strong["expected_impact"] == pytest.approx(30.0)
    assert hot["rate_pooling"] == "page" and hot["moving_share"] == pytest.approx(0.5)
    # it changed on each of its six checks, alone: its own rhythm, not its host's events
    assert re.fullmatch(r"refresh: P\(changed\) 0\.6\d+ \(its own rate [\d.]+/cycle\) x carried impact [\d.]+ x "
                        r"moving share 0\.5", hot["why"]), hot["why"]
    assert strong["why"].startswith("new: bfs priority -")
    assert strong["why"].endswith(", expected impact 30.0 x calibration 1.0")  # no new URL fetched before


def test_a_new_url_s_expected_impact_is_calibrated_by_what_the_last_new_urls_carry(tmp_path: Path) -> None:
    s = impact_state(tmp_path)
    with connect(s) as con:  # two new URLs fetched this cycle were expected to carry 60 and 40
        stored(con, "http://b.test/fetched-1", 1)
        stored(con, "http://b.test/fetched-2", 1)
        con.executemany("INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority, parts, "
                        "kind) VALUES (?, ?, ?, 'b.test', ?, 'bfs', 0, ?, 'new')",
                        [(NOW, NOW - 1, "http://b.test/fetched-1", 1, '{"expected_impact": 60}'),
                         (NOW, NOW - 1, "http://b.test/fetched-2", 2, '{"expected_impact": 40}'),
                         (NOW - 3, NOW - 4, "http://b.test/too-old", 1, '{"expected_impact": 900}')])
    # they carry nothing: the strong new URL is worth nothing either, and the static page takes its slot
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/hot", "http://a.test/static"]
    with connect(s) as con:  # one of them shows first for a query asked 10 times
        shown(con, "r", 10, ["http://b.test/fetched-1"] + [f"http://c.test/{i}" for i in range(9)])
        carried = con.execute("SELECT carried_impact FROM carried_impact(?, 10) WHERE url = 'http://b.test/fetched-1'",
                              [NOW]).fetchall()[0][0]
    assert carried == pytest.approx(10 * 10 / sum(i ** -1.5 for i in range(1, 11)))
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/hot", "http://b.test/strong"]
    strong = batch.row(1, named=True)
    assert strong["impact_calibration"] == pytest.approx(carried / 100, abs=1e-9)
    assert strong["why"].endswith(f", expected impact {strong['expected_impact']} x calibration "
                                  f"{round(carried / 100, 4)}")


def test_impact_probes_a_host_whose_latest_check_is_old_with_the_page_that_changed_with_its_events(
        tmp_path: Path) -> None:
    """One check tells whether a host had a change event since its latest: the probe is worth the impact its pages
    would recover, and goes to the page that changed with the host's past event."""
    s = state(tmp_path, "impact", batch_size=3, refresh_prior_weight=2.0, change_rate_prior=0.1)
    with connect(s) as con:
        stored(con, "http://a.test/changer", 9, (True,), gap=3)        # changed in the event seen in cycle 12
        stored(con, "http://a.test/spared", 9, (False,), gap=3)        # checked in 12 too, unchanged
        stored(con, "http://a.test/quiet", 9)
        shown(con, "q", 10, ["http://a.test/quiet", "http://a.test/spared", "http://a.test/changer"])
        new(con, "http://b.test/new", pagerank=0.01)
    batch = choose(s)
    with connect(s) as con:
        values = dict(con.execute("SELECT url, value FROM refresh_scores WHERE score_cycle = ?", [NOW]).fetchall())
        carried = dict(con.execute("SELECT url, carried_impact FROM carried_impact(?, ?)", [NOW, s.top_k]).fetchall())
        f = freshness(s)
    # the probe takes a slot no new URL wants; the other pages, each likely unchanged, leave theirs empty
    assert batch["url"].to_list() == ["http://a.test/changer", "http://b.test/new"]
    assert batch["why"][0].startswith("refresh: probe of a.test: P(a change event since its latest check) ")
    share = (1 + 2.0 * 0.5) / (2 + 2.0)
    unseen = 1 - math.exp(-(1 + 2.0 * 0.1) / ((NOW + 1 - 9) + 2.0) * (NOW + 1 - 12))
    assert f["http://a.test/quiet"]["host_unseen"] == pytest.approx(unseen)
    moving = s.moving_share_prior  # no changed check judged yet
    assert values["http://a.test/changer"] == pytest.approx(unseen * share * moving * sum(carried.values()))
    # the other pages keep their own value: P(changed) x carried impact x moving share
    assert values["http://a.test/quiet"] == pytest.approx(
        f["http://a.test/quiet"]["p_changed"] * carried["http://a.test/quiet"] * moving)


def test_refreshes_of_equal_value_go_by_p_changed(tmp_path: Path) -> None:
    """Pages that carry no impact today are all worth nothing: the refreshes that fill the batch take the copies most
    likely stale first, not the first URLs."""
    s = state(tmp_path, "impact", batch_size=1, refresh_prior_weight=2.0)
    with connect(s) as con:
        for i in range(3):                                                 # a release seen in cycle 15
            stored(con, f"http://a.test/released-{i}", 6, (True,), gap=4)
        stored(con, "http://a.test/fresh", 3)                              # copy of 18: after it
        stored(con, "http://a.test/z-stale", 10)                           # copy of 11: before it
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/z-stale"]
    assert batch["p_changed"][0] > 3 * freshness(s)["http://a.test/fresh"]["p_changed"]


def test_the_split_follows_the_values(tmp_path: Path) -> None:
    s = impact_state(tmp_path)
    with connect(s) as con:  # the hot page as static as the other, neither shown: the weak new URL beats both
        con.execute("UPDATE page_checks SET changed = false, outcome = 'unchanged'")
        con.execute("DELETE FROM query_results")
    assert choose(s)["url"].to_list() == ["http://b.test/strong", "http://b.test/weak"]


def test_the_floor_and_cap_of_the_refresh_share_hold(tmp_path: Path) -> None:
    capped = choose(impact_state(tmp_path / "cap", batch_size=4, refresh_share_max=0.25))
    assert capped["kind"].to_list().count("refresh") == 1  # the hot page alone, though the static one beats weak
    floored = choose(impact_state(tmp_path / "floor", batch_size=4, refresh_share_min=0.75))
    assert floored["kind"].to_list().count("refresh") == 3
    assert floored.filter(pl.col("kind") == "new")["url"].to_list() == ["http://b.test/strong"]


def test_a_refresh_unlikely_to_find_a_change_leaves_a_spare_slot_empty(tmp_path: Path) -> None:
    """Two new URLs for four slots: the hot page's refresh takes one, and the pages whose checks came back unchanged
    (or that were never checked) would take the spare slots only to answer 304."""
    batch = choose(impact_state(tmp_path / "default", batch_size=4))
    assert batch["url"].to_list() == ["http://a.test/hot", "http://b.test/strong", "http://b.test/weak"]
    assert batch.filter(pl.col("kind") == "refresh")["p_changed"].min() >= 0.5
    filled = choose(impact_state(tmp_path / "filled", batch_size=4, refresh_fill_p_changed=0.0))
    assert filled.height == 4 and filled["p_changed"].drop_nulls().min() < 0.5


def test_the_per_host_cap_holds_for_new_urls_and_refreshes_together(tmp_path: Path) -> None:
    s = impact_state(tmp_path, batch_size=6, per_host_cap=2, refresh_fill_p_changed=0.0)  # refreshes fill
    with connect(s) as con:
        new(con, "http://a.test/new-page", pagerank=1.0)  # worth less than the two refreshes of its host
    batch = choose(s)
    assert batch["url"].to_list() == ["http://a.test/hot", "http://b.test/strong", "http://a.test/static",
                                      "http://b.test/weak"]


def test_a_cycle_s_rollback_removes_its_refresh_scores(tmp_path: Path) -> None:
    s = impact_state(tmp_path)
    with connect(s) as con:
        registry.score_frontier(con, s, NOW)
        registry.score_frontier(con, s, NOW - 1)
        assert con.execute("SELECT count(*) FROM refresh_scores WHERE score_cycle = ?", [NOW]).fetchall()[0][0] == 4
        update.merge_shards(con, s, NOW, [])  # the update stage of cycle NOW again, here with no shard output
        assert con.execute("SELECT DISTINCT score_cycle FROM refresh_scores").fetchall() == [(NOW - 1,)]


def test_refresh_policy_none_leaves_the_batch_to_new_urls(tmp_path: Path) -> None:
    s = state(tmp_path, "none")
    with connect(s) as con:
        stored(con, "http://a.test/old", 80, (True,) * 3)
        new(con, "http://b.test/new-0")
    assert choose(s)["url"].to_list() == ["http://b.test/new-0"]


# -- cycle figures -----------------------------------------------------------------------------------------------------


def test_the_cycle_figures_count_refreshes_304s_changes_and_gone_pages_and_estimate_freshness(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    s = state(tmp_path, "impact", change_rate_prior=0.2, refresh_prior_weight=1.0, change_model="poisson")
    with connect(s) as con:
        stored(con, "http://a.test/fresh", 1, (False,))  # checked in cycle NOW
        stored(con, "http://a.test/old", 4)
        stored(con, "http://a.test/unindexed", 4)
        con.execute("INSERT INTO posting_docs (doc, url, cycle, anchor_cycle) "
                    "VALUES (1, 'http://a.test/fresh', 1, 1), (2, 'http://a.test/old', 1, 1)")
        con.executemany("INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed) "
                        "VALUES (?, ?, 'a.test', ?, ?, ?, ?)",
                        [(NOW, "http://a.test/304", "not_modified", 304, 3, False),
                         (NOW, "http://a.test/gone", "gone", 404, 3, None),
                         (NOW, "http://a.test/moved", "moved", 301, 3, None),
                         (NOW, "http://a.test/changed", "changed", 200, 3, True)])
        con.executemany("INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority, kind) "
                        "VALUES (?, ?, ?, 'a.test', ?, 'x', 0, ?)",
                        [(NOW, NOW - 1, "http://a.test/304", 1, "refresh"), (NOW, NOW - 1, "http://a.test/n", 2, "new"),
                         (NOW + 1, NOW, "http://a.test/r", 1, "refresh"),
                         (NOW + 1, NOW, "http://a.test/m", 2, "new"), (NOW + 1, NOW, "http://a.test/o", 3, "new")])
        run_sql(con, "pipeline/update/cycle_figures", cycle=NOW)
        run_sql(con, "pipeline/stages/close_cycle", cycle=NOW)
        row = con.sql("SELECT * FROM v_cycle_summary WHERE cycle = ?", params=[NOW]).pl().row(0, named=True)
        rate_old = con.execute("SELECT change_rate FROM page_freshness(?, ?::JSON) WHERE url = 'http://a.test/old'",
                               [NOW, json.dumps(s.section("refresh"))]).fetchall()[0][0]
    assert (row["refreshes"], row["checks_not_modified"], row["checks_changed"], row["checks_gone"]) == (1, 1, 1, 2)
    # the fresh page: 0 cycles; the old one: its rate's P(changed) over 3 cycles, weighed against the fresh page's
    # check since, unchanged (refresh_prior_weight 1)
    p_old = (0 + 1.0 * (1 - math.exp(-rate_old * 3))) / (1 + 1.0)
    assert row["est_freshness"] == pytest.approx((1 + (1 - p_old)) / 2)
    assert row["next_refresh_share"] == pytest.approx(1 / 3)
    print_report(s)
    assert (f"cycle {NOW} freshness: 1 refreshes in the batch: 1 not modified (304), 1 changed, 2 left the index; "
            f"estimated freshness {100 * row['est_freshness']:.1f} %; the batch it chose: 33.3 % refreshes"
            ) in capsys.readouterr().out.splitlines()


# -- the registry ------------------------------------------------------------------------------------------------------


def test_every_refresh_policy_but_none_has_one_sql_statement_and_every_sql_file_an_entry() -> None:
    folder = SQL_DIR / "ordering" / "refresh" / "policies"
    assert sorted(p.stem for p in folder.glob("*.sql")) == sorted(p.name for p in REGISTRY if p.sql)
    assert [p.name for p in REGISTRY if not p.sql] == ["none"]
    for entry in REGISTRY:
        if entry.sql:
            assert len(statements(entry.sql)) == 1, entry.name


def test_the_refresh_settings_take_the_registry_s_policies_and_say_what_is_wrong() -> None:
    base = {"user_agent": USER_AGENT}
    for name in NAMES:
        assert load_settings(overrides={**base, "refresh_policy": name}, environ={}).refresh_policy == name
    for overrides, message in (
            ({"refresh_policy": "lru"}, f"setting refresh_policy: choose one of {', '.join(NAMES)}, got 'lru'"),
            ({"min_revisit_cycles": 5, "max_revisit_cycles": 4}, "setting max_revisit_cycles: must be >= "
                                                                 "min_revisit_cycles (5), got 4"),
            ({"fixed_revisit_cycles": 100}, "setting fixed_revisit_cycles: must lie in [min_revisit_cycles, "
                                            "max_revisit_cycles] ([1, 90]), got 100"),
            ({"refresh_share_min": 0.5, "refresh_share_max": 0.2}, "setting refresh_share_max: must be >= "
                                                                   "refresh_share_min (0.5), got 0.2"),
            ({"adaptive_dec_rate": 1.0}, "setting adaptive_dec_rate: must lie in [0, 1), got 1.0")):
        named = message.split(":")[0].removeprefix("setting ")  # the setting the message names came from a flag
        with pytest.raises(ValueError, match=f"^{re.escape(message)} \\(from flag --{named.replace('_', '-')}\\)$"):
            load_settings(overrides={**base, **overrides}, environ={})
