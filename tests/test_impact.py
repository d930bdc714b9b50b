"""Impact-driven ordering on small hand-built crawl states in a real DuckDB file: the n-gram index and
matching, the prestige regression, and the hybrid policy choosing what needy queries need."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.db import connect, migrate
from crawlcycle.models import prestige
from crawlcycle.ordering import registry
from crawlcycle.pipeline import stages
from crawlcycle.pipeline.materialize import materialize
from crawlcycle.ranking import ngram_index, ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.crawl_state import DAY, add_links, add_page, add_urls, new_state


@pytest.fixture
def state(tmp_path: Path) -> Settings:
    return new_state(tmp_path, "hybrid", batch_size=1, needy_share=1.0)


def test_ngrams_are_word_ngrams_of_the_terms_without_stopwords() -> None:
    frame = pl.DataFrame({"k": [1, 2], "text": ["The Art of War guide", "war"]})
    grams = ngram_index.ngrams(frame, "k", "text", 3)
    got = {k: set(grams.filter(pl.col("k") == k)["gram"]) for k in (1, 2)}
    assert got == {1: {"art", "war", "guide", "art war", "war guide", "art war guide"}, 2: {"war"}}
    assert set(ngram_index.ngrams(frame, "k", "text", 1)["gram"]) == {"art", "war", "guide"}


def test_matching_needs_rho_of_the_query_ngrams_from_url_or_anchors(state: Settings) -> None:
    with connect(state) as con:
        add_urls(con, ["http://a.test/judy-inklesmurf", "http://b.test/judy", "http://c.test/page"])
        add_links(con, [("http://a.test/judy-inklesmurf", "http://c.test/page", "Inklesmurf, Judy")])
        ngram_index.update(con, state, 1)
        con.execute("CREATE TEMP TABLE s_scope AS SELECT discovery_seq AS seq FROM frontier")
        q = pl.DataFrame({"qid": [0], "query": ["Judy Inklesmurf"]})
        seq = dict(con.execute("SELECT discovery_seq, url FROM frontier").fetchall())

        def matched(share: float) -> dict[str, tuple[float, float, float]]:
            m = ngram_index.match(con, state, q, share)
            return {seq[r["seq"]]: (r["share"], r["url_share"], r["anchor_share"]) for r in m.iter_rows(named=True)}

        # 'judy', 'inklesmurf', 'judy inklesmurf': all three in a.test's URL; c.test's anchor lacks the bigram
        assert matched(1.0) == {"http://a.test/judy-inklesmurf": (1.0, 1.0, 0.0)}
        assert matched(0.5) == {"http://a.test/judy-inklesmurf": (1.0, 1.0, 0.0),
                                "http://c.test/page": (pytest.approx(2 / 3), 0.0, pytest.approx(2 / 3))}
        assert set(matched(0.3)) == {"http://a.test/judy-inklesmurf", "http://b.test/judy", "http://c.test/page"}


def _index_rows(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("SELECT DISTINCT gram, f.url, n.source FROM url_ngrams n JOIN frontier f "
                       "ON f.discovery_seq = n.seq ORDER BY ALL").fetchall()


# One URL or anchor per chunk: the n-grams a URL gets from anchors in two chunks are stored once all the same.
@pytest.mark.parametrize("chunk_rows", [ngram_index.CHUNK_ROWS, 1])
def test_the_index_grows_incrementally_to_what_a_rebuild_gives(state: Settings, tmp_path: Path, chunk_rows: int,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ngram_index, "CHUNK_ROWS", chunk_rows)
    first, later = ["http://a.test/red-apple", "http://b.test/"], ["http://c.test/green-pear-tart"]
    links1 = [("http://b.test/", "http://a.test/red-apple", "apples")]
    links2 = [("http://a.test/red-apple", "http://c.test/green-pear-tart", "pear tart recipe"),
              ("http://b.test/", "http://a.test/red-apple", "crisp red apples")]
    with connect(state) as con:
        add_urls(con, first)
        add_links(con, links1, 1)
        ngram_index.update(con, state, 1)
        add_urls(con, later, 2)
        add_links(con, links2, 2)
        ngram_index.update(con, state, 2)
        once = _index_rows(con)
        ngram_index.update(con, state, 2)  # a re-run of the refit replaces its own rows
        assert _index_rows(con) == once
        assert con.execute("SELECT count(*) - count(DISTINCT (gram, seq, source)) FROM url_ngrams").fetchall()[0][0] \
            == 0
    rebuilt = load_settings(overrides={"user_agent": state.user_agent, "db_path": str(tmp_path / "re.duckdb"),
                                       "data_dir": str(tmp_path / "re")}, environ={})
    with connect(rebuilt) as con:
        migrate(con)
        add_urls(con, first + later)
        add_links(con, links1 + links2, 1)
        ngram_index.update(con, rebuilt, 1)
        assert _index_rows(con) == once
        assert con.execute("SELECT count(*) - count(DISTINCT (gram, seq, source)) FROM url_ngrams").fetchall()[0][0] \
            == 0
    assert ("crisp red", "http://a.test/red-apple", "anchor") in once
    assert ("green pear tart", "http://c.test/green-pear-tart", "url") in once


def test_prestige_regression_recovers_a_quadratic_from_impressions(state: Settings) -> None:
    # views = 1 + 2 pr + pr^2 + in_links, pr = PageRank x known URLs
    grid = [(k, links) for k in range(5) for links in range(4)]
    urls = [f"http://p{k}.test/{links}" for k, links in grid]
    with connect(state) as con:
        add_urls(con, urls)
        for (k, links), url in zip(grid, urls, strict=True):
            add_page(con, url, f"page {k} {links}", "some words")
            con.execute("UPDATE frontier SET pagerank = ? / 20.0, in_links = ? WHERE url = ?", [k, links, url])
        ranker.index_pages(con, 1)
        rows = [(DAY, "q", 1.0, f"2026-11-01 00:00:{i:02d}", url, 1, i % 2 == 0)
                for (k, links), url in zip(grid, urls, strict=True) for i in range(1 + 2 * k + k * k + links)]
        con.executemany("INSERT INTO query_log VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        metrics = prestige.fit(con, state, 1)
        assert metrics["impact_source"] == "views" and metrics["r2"] == pytest.approx(1.0)
        c = prestige.coefficients(con, 1)
        assert [round(c[b], 6) for b in ("b0", "b1", "b2", "b11", "b12", "b22")] == [1, 2, 1, 1, 0, 0]


def test_a_tail_page_a_needy_query_matches_beats_a_high_pagerank_page(tmp_path: Path) -> None:
    # what the pages open aside (their discovery value is tested below): query-based impact against prestige
    state = new_state(tmp_path, "hybrid", batch_size=1, needy_share=1.0, hybrid_discovery_weight=0.0)
    hub, tail, plain = "http://news.test/hub", "http://wiki.test/people/4711", "http://wiki.test/people/4712"
    crawled = [f"http://news.test/football/{i}" for i in range(30)]
    with connect(state) as con:
        add_urls(con, crawled + [hub, tail, plain, "http://blog.test/notes"])
        for url in crawled:
            add_page(con, url, "Football scores today", "football scores league results table")
        add_page(con, "http://blog.test/notes", "Notes", "reading list")
        add_links(con, [(src, hub, "home") for src in crawled]
                  + [("http://blog.test/notes", tail, "Judy Inklesmurf biography"),
                     ("http://blog.test/notes", plain, "another person")])
        con.executemany("INSERT INTO query_log (partition, query, frequency) VALUES (?, ?, ?)",
                        [(DAY, "football scores", 1000.0), (DAY, "judy inklesmurf", 3.0)])
    stages.refit_models(state, 1)
    stages.select_needy(state, 1)
    stages.score(state, 1)
    stages.materialize(state, 1)
    with connect(state, read_only=True) as con:
        assert con.execute("SELECT url FROM batches WHERE fetch_cycle = 2").fetchall() == [(tail,)]
        explain = con.execute("SELECT url, query_impact, query_part, prestige_part, needy_queries "
                              "FROM v_batch_explain WHERE fetch_cycle = 2").fetchall()
        assert explain == [(tail, 3.0, 1.0, pytest.approx(explain[0][3]), ["judy inklesmurf"])]
        scores = dict(con.execute("SELECT url, priority FROM frontier_scores WHERE score_cycle = 1").fetchall())
        in_links = dict(con.execute("SELECT url, in_links FROM frontier").fetchall())
        # the hub has the most prestige: first among pages no needy query reaches, behind the tail page
        assert in_links[hub] == 30 and in_links[tail] == 1
        assert scores[tail] > scores[hub] > scores[plain]
        assert con.execute("SELECT query, url, crawled FROM sketches WHERE NOT crawled").fetchall() \
            == [("judy inklesmurf", tail, False)]
    # Ordered by PageRank alone, the hub goes first.
    with connect(state) as con:
        registry.score_frontier(con, load_settings(overrides={**_overrides(state), "policy": "pagerank"}, environ={}),
                                1)
        assert materialize(con, state, 1)["url"].to_list() == [hub]


def _overrides(s: Settings) -> dict[str, object]:
    return {"user_agent": s.user_agent, "db_path": s.db_path, "data_dir": s.data_dir, "batch_size": s.batch_size}


def test_discovery_value_follows_what_fetched_pages_revealed_and_opens_hosts_needy_queries_point_at(
        state: Settings) -> None:
    docs, blog = "http://a.test/docs/1", "http://b.test/blog/1"
    answer, revealed_plain = "http://n.test/answer", "http://b.test/blog/2"
    with connect(state) as con:
        add_urls(con, [docs, blog, "http://a.test/docs/2", "http://b.test/blog/3", "http://c.test/x",
                       "http://n.test/other"])
        add_urls(con, [answer, revealed_plain], cycle_no=1)  # first seen in cycle 1, through these links:
        for url in (docs, blog):
            add_page(con, url, "A page", "some words")
        add_links(con, [(docs, answer, "Judy Inklesmurf biography"), (blog, revealed_plain, "older posts")])
        con.execute("INSERT INTO query_log (partition, query, frequency) VALUES (?, 'judy inklesmurf', 10.0)", [DAY])
    stages.refit_models(state, 1)
    stages.select_needy(state, 1)
    stages.score(state, 1)
    with connect(state, read_only=True) as con:
        parts = {url: json.loads(p) for url, p in con.execute("SELECT url, parts FROM frontier_scores").fetchall()}
    # without an odds model the answer holds the needy query's whole frequency: what fetching docs/1 revealed
    assert parts[answer]["query_impact"] == 10.0 and parts[revealed_plain]["query_impact"] == 0
    # fetched pages revealed 10 (docs/1) and 0 (blog/1): mean 5; hosts a and b shrunk towards it by 5 pages'
    # worth, path groups towards their host; a host nothing was fetched from gets the mean of all
    host_a, host_b = (10 + 5 * 5) / 6, (0 + 5 * 5) / 6
    learned = {u: parts[u]["discovery_learned"] for u in ("http://a.test/docs/2", "http://b.test/blog/3",
                                                          "http://c.test/x")}
    assert learned == pytest.approx({"http://a.test/docs/2": (10 + 5 * host_a) / 6,
                                     "http://b.test/blog/3": (0 + 5 * host_b) / 6, "http://c.test/x": 5.0})
    # n.test: a needy query points at it (10 of query-based impact on its eligible URLs), no page crawled yet
    assert parts["http://n.test/other"]["discovery_opening"] == 10.0
    assert parts["http://c.test/x"]["discovery_opening"] == 0
    assert max(parts, key=lambda u: parts[u]["discovery_part"]) in (answer, "http://n.test/other")



def test_hybrid_keeps_every_servable_query_that_ties_with_its_last_needy_one(tmp_path: Path) -> None:
    state = new_state(tmp_path, "hybrid", needy_min=1, needy_share=0.0)
    with connect(state) as con:
        add_urls(con, ["http://a.test/", "http://a.test/alpha", "http://a.test/beta", "http://a.test/delta"])
        add_page(con, "http://a.test/", "Guides", "all the guides")
        add_links(con, [("http://a.test/", "http://a.test/alpha", "alpha guide"),
                        ("http://a.test/", "http://a.test/beta", "beta guide"),
                        ("http://a.test/", "http://a.test/delta", "delta notes")])
        # one needy query wanted: three tie at the top, one of them answered by no frontier page
        con.executemany("INSERT INTO query_log (partition, query, frequency) VALUES (?, ?, ?)",
                        [(DAY, "beta guide", 5.0), (DAY, "alpha guide", 5.0), (DAY, "gamma zeta", 5.0),
                         (DAY, "delta notes", 2.0)])
    stages.refit_models(state, 1)
    needy = set()
    for seed in (0, 1, 2):
        s = load_settings(overrides={**_overrides(state), "policy": "hybrid", "needy_min": 1, "needy_share": 0.0,
                                     "perturb_seed": seed}, environ={})
        stages.select_needy(s, 1)
        with connect(s, read_only=True) as con:
            needy.add(tuple(sorted(q for (q,) in con.execute("SELECT query FROM needy_queries WHERE cycle = 1")
                                   .fetchall())))
    assert needy == {("alpha guide", "beta guide")}
