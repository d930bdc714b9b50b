"""Matching needy queries to frontier pages on real pages: the Requests documentation cut from
../shared/corpus/dev-docs.warc.gz, crawled by the simulator with real queries (the site's own page titles and
CodeSearchNet web queries, synthetic Zipf frequencies) and two made-up queries that nothing can answer."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from crawlcycle.db import connect, run_sql
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.models import score_model
from crawlcycle.ordering import registry
from crawlcycle.ranking import evidence_index, semantic_match, sentence_embedding
from crawlcycle.ranking.ngram_index import ngrams
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT

SITE = "http://requests.docs.test/"
UNANSWERABLE = ["qzxv frobnicated wugs", "blorptastic snarfle"]


def _inputs(folder: Path, shared: Path) -> dict[str, Path]:
    """The Requests site's records, seeds, and a query log: unanswerable queries first, then titles and CSN."""
    warc, titles = folder / "requests.warc.gz", []
    with (shared / "corpus" / "dev-docs.warc.gz").open("rb") as f, warc.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response" and (rec.rec_headers.get_header("WARC-Target-URI") or "").startswith(SITE):
                writer.write_record(rec)
    with warc.open("rb") as f:
        for rec in ArchiveIterator(f):
            title = re.search(rb"<title>(.*?)</title>", rec.content_stream().read(), re.S)
            if title:
                titles.append(" ".join(title[1].decode("utf-8", "replace").split()))
    csn = (shared / "queries" / "csn_queries.csv").read_text().splitlines()[1:31]
    texts = UNANSWERABLE + sorted(set(titles))[:40] + csn
    queries = folder / "queries.tsv"
    queries.write_text("".join(f"{q}\t{round(1000 / rank)}\n" for rank, q in enumerate(texts, 1)))
    seeds = folder / "seeds.txt"
    seeds.write_text(SITE + "index.html\n")
    return {"warc": warc, "queries": queries, "seeds": seeds}


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> dict[str, Path]:
    """Three hybrid cycles of 10 pages, matching by evidence and by Pandey & Olston's n-gram rule."""
    folder = tmp_path_factory.mktemp("evidence")
    inputs, cache, out = _inputs(folder, shared), folder / "cache", {}
    for mode in ("evidence", "ngram"):
        settings = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": 10, "shards": 1,
                                                        "match_mode": mode, "needy_min": 10})
        simulate(settings, [inputs["warc"]], inputs["queries"], inputs["seeds"], ["hybrid"], 3, folder / mode,
                 progress=lambda m: None, cache=cache)
        out[mode] = folder / mode / "work" / "crawl.duckdb"  # one policy: its outputs fill the folder
    return out


def _gram_share(con: duckdb.DuckDBPyConnection, query: str, url: str) -> float:
    """Share of the query's word 1..3-grams among the URL's and its anchors' n-grams (url_ngrams)."""
    grams = ngrams(pl.DataFrame({"k": [0], "q": [query]}), "k", "q", 3)["gram"].to_list()
    found = con.execute("SELECT count(DISTINCT n.gram) FROM url_ngrams n JOIN frontier f ON f.discovery_seq = n.seq "
                        "WHERE f.url = ? AND list_contains(?, n.gram)", [url, grams]).fetchall()[0][0]
    return found / len(grams)


def test_a_page_without_an_exact_ngram_match_enters_a_sketch_by_its_evidence(crawls: dict[str, Path]) -> None:
    with duckdb.connect(str(crawls["evidence"]), read_only=True) as con:
        frontier = con.sql("SELECT cycle, query, url FROM sketches WHERE NOT crawled ORDER BY ALL").fetchall()
        assert frontier
        partial = [(c, q, u) for c, q, u in frontier if _gram_share(con, q, u) < 1]
        assert partial, "every frontier page in a sketch held all the query's n-grams"
        for cycle, query, url in partial:
            # the evidence that put it there: an anchor or a linking page's title holding a query word, or a link
            # from one of the query's current results
            words = set(re.findall(r"[^\W_]+", query.lower()))
            linked_from_result = con.execute(
                "SELECT count(*) FROM links l JOIN query_results r ON r.url = l.src WHERE r.cycle = ? "
                "AND r.query = ? AND l.dst = ?", [cycle, query, url]).fetchall()[0][0]
            texts = con.execute("SELECT l.anchor || ' ' || coalesce(l.context, '') || ' ' || coalesce(p.title, '') "
                                "FROM links l LEFT JOIN pages p ON p.url = l.src WHERE l.dst = ?", [url]).fetchall()
            said = any(words & set(re.findall(r"[^\W_]+", t.lower())) for (t,) in texts)
            assert linked_from_result or said, (query, url)
        # and it counts: the batch chosen by those sketches holds query-based impact
        batch = con.sql("SELECT count(*) FILTER (WHERE (parts->>'query_impact')::DOUBLE > 0) FROM batches "
                        "WHERE fetch_cycle > 1").fetchall()[0][0]
        assert batch > 0


def test_ngram_mode_keeps_the_exact_rule(crawls: dict[str, Path]) -> None:
    with duckdb.connect(str(crawls["ngram"]), read_only=True) as con:
        frontier = con.sql("SELECT query, url FROM sketches WHERE NOT crawled").fetchall()
        assert all(_gram_share(con, q, u) == 1 for q, u in frontier)


def test_needy_queries_nothing_can_answer_are_skipped(crawls: dict[str, Path]) -> None:
    with duckdb.connect(str(crawls["evidence"]), read_only=True) as con:
        needy = con.sql("SELECT cycle, query, candidates FROM needy_queries ORDER BY cycle, rank").pl()
        # the two most frequent queries of the log hold no word any page or link has: never needy
        assert not needy.filter(pl.col("query").is_in(UNANSWERABLE)).height
        assert needy.height == 3 * 10 and (needy["candidates"] > 0).all()


def test_s_prime_is_validated_against_the_old_features(crawls: dict[str, Path]) -> None:
    with duckdb.connect(str(crawls["evidence"]), read_only=True) as con:
        runs = con.sql("SELECT features, metrics FROM model_runs "
                       "WHERE model = 's_prime' AND file IS NOT NULL").fetchall()
    assert runs
    for features, metrics in runs:
        m = json.loads(metrics)
        assert "inherited_max" in features and "evidence_score" in features
        assert m["validation_mae"] >= 0 and m["old_features_validation_mae"] >= 0


def test_the_score_stage_starts_from_the_candidates_select_needy_stored(crawls: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    """Sketches from select_needy's stored candidates equal sketches from matching the needy queries again."""
    db = tmp_path / "crawl.duckdb"
    shutil.copy(crawls["evidence"], db)
    settings = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": 10, "policy": "hybrid",
                                                    "match_mode": "evidence", "needy_min": 10, "db_path": str(db),
                                                    "data_dir": str(tmp_path)})
    scored = "SELECT url, priority, parts FROM frontier_scores WHERE score_cycle = $c ORDER BY ALL"
    sketched = "SELECT * FROM sketches WHERE cycle = $c ORDER BY ALL"
    with connect(settings) as con:
        cycle = con.execute("SELECT max(cycle) FROM needy_candidates").fetchall()[0][0]
        queries = score_model.stage_queries(con.sql("SELECT query FROM needy_queries WHERE cycle = ?",
                                                    params=[cycle]).pl()["query"].to_list())
        registry.stage_eligible(con, settings, cycle)
        run_sql(con, "ordering/frontier_scope")
        stored = evidence_index.stored_candidates(con, cycle, queries)
        assert stored is not None and stored.height > queries.height
        assert stored.equals(evidence_index.candidates(con, settings, cycle, queries.select("qid", "query")))
        registry.score_frontier(con, settings, cycle)
        reused = [con.execute(sql, {"c": cycle}).fetchall() for sql in (scored, sketched)]
        assert reused[1]
        # one row short: the store is not used (and no store at all likewise), the queries are matched again
        con.execute("DELETE FROM needy_candidates WHERE rowid = (SELECT min(rowid) FROM needy_candidates "
                    "WHERE cycle = ?)", [cycle])
        assert evidence_index.stored_candidates(con, cycle, queries) is None
        con.execute("DELETE FROM needy_candidates WHERE cycle = ?", [cycle])
        registry.score_frontier(con, settings, cycle)
        assert [con.execute(sql, {"c": cycle}).fetchall() for sql in (scored, sketched)] == reused



def _titles(warc: Path) -> dict[str, str]:
    """Each page's <title>, whitespace collapsed, lower case: the workload's queries as the log holds them."""
    titles = {}
    with warc.open("rb") as f:
        for rec in ArchiveIterator(f):
            title = re.search(rb"<title>(.*?)</title>", rec.content_stream().read(), re.S)
            if title:
                titles[rec.rec_headers.get_header("WARC-Target-URI")] = " ".join(
                    title[1].decode("utf-8", "replace").split()).lower()
    return titles


def test_top_k_odds_are_low_without_evidence_and_high_for_the_page_a_query_names(crawls: dict[str, Path]) -> None:
    """On the Requests pages: held-out pairs the odds model calls unlikely rarely enter the query's top K and those
    it calls likely do; in the last cycle, frontier pages with no evidence for a query (only linked from one of its
    results) get small odds; and the page whose title a query is gets large odds whenever a model decides."""
    with duckdb.connect(str(crawls["evidence"]), read_only=True) as con:
        fits = con.sql("SELECT cycle, metrics FROM model_runs "
                       "WHERE model = 'top_k_odds' AND file IS NOT NULL ORDER BY cycle").fetchall()
        assert fits, "no top-K odds model was fitted"
        for _, metrics in fits:
            m = json.loads(metrics)
            assert m["brier"] < min(m["brier_base_rate"], m["brier_s_prime"]), m
            deciles = {d["decile"]: d for d in m["reliability"]}
            assert sum(d["pairs"] for d in deciles.values()) == m["validation_pairs"]
            assert deciles[0]["hit_rate"] < 0.2 and deciles[9]["hit_rate"] > 0.8, deciles
        odds = con.sql("""
            SELECT o.cycle, o.query, o.url, o.p_top_k, c.evidence_score
            FROM top_k_odds o
            JOIN frontier f ON f.url = o.url
            JOIN needy_candidates c ON c.cycle = o.cycle AND c.query = o.query AND c.seq = f.discovery_seq
            WHERE o.cycle >= ?
        """, params=[fits[0][0]]).pl()
    unsupported = odds.filter((pl.col("evidence_score") == 0) & (pl.col("cycle") == odds["cycle"].max()))
    assert unsupported.height and unsupported["p_top_k"].median() < 0.1, unsupported.sort("p_top_k").tail(5)
    titles = _titles(crawls["evidence"].parents[2] / "requests.warc.gz")
    named = odds.filter(pl.struct("url", "query").map_elements(lambda r: titles.get(r["url"]) == r["query"],
                                                               return_dtype=pl.Boolean))
    assert named.height and named["p_top_k"].min() > 0.5, named


REFERENCE_TEXTS = ["how do I log in with a username and password", "requests docs test user authentication html",
                   "Basic Authentication", "Zürich café – naïve résumé", "x",
                   " ".join(f"word{i} and more text" for i in range(40))]  # longer than MAX_TOKENS: cut


def test_sentence_vectors_are_those_of_the_reference_implementation() -> None:
    """NumPy's forward pass gives the vectors sentence-transformers gives (``tests/data/SOURCES.md``)."""
    reference = np.load(Path(__file__).parent / "data" / "minilm_reference.npy")
    ours = sentence_embedding.encode(REFERENCE_TEXTS)
    assert ours.shape == reference.shape
    assert np.abs(ours - reference).max() < 1e-5


def test_a_query_sharing_no_word_with_a_page_finds_it_by_meaning(crawls: dict[str, Path], tmp_path: Path) -> None:
    """On the Requests pages: a question about logging in with a password, none of whose words is in the
    authentication page's URL or anchors, is closest in meaning to that page; every text is embedded once."""
    db = tmp_path / "crawl.duckdb"
    shutil.copyfile(crawls["evidence"], db)
    question = "how can I sign in with my username plus password"
    with duckdb.connect(str(db)) as con:
        pages = con.sql("SELECT discovery_seq AS seq, url FROM frontier").pl()
        target = pages.filter(pl.col("url") == SITE + "user/authentication.html")["seq"].item()
        anchors = con.execute("SELECT string_agg(anchor, ' ') FROM links l JOIN frontier f ON f.url = l.dst "
                              "WHERE f.discovery_seq = ?", [target]).fetchall()[0][0]
        described = set(re.split(r"\W+", f"{anchors} {SITE}user/authentication.html".lower()))
        assert anchors and not set(question.split()) & described
        pairs = pages.select(qid=pl.lit(0, pl.UInt32), seq="seq")
        queries = pl.DataFrame({"qid": [0], "query": [question]}, schema={"qid": pl.UInt32, "query": pl.String})
        matched = pairs.with_columns(semantic_match.scores(con, pairs, queries))
        kept = con.sql("SELECT count(*) FROM text_vectors").fetchall()[0][0]
        again = semantic_match.scores(con, pairs, queries)
        assert con.sql("SELECT count(*) FROM text_vectors").fetchall()[0][0] == kept > pages.height
    assert matched.sort("semantic_match", descending=True)["seq"][0] == target
    assert again.equals(matched["semantic_match"])


def test_s_prime_with_the_semantic_feature_records_what_it_adds(crawls: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "crawl.duckdb"
    shutil.copyfile(crawls["evidence"], db)
    settings = load_settings(environ={}, overrides={"db_path": str(db), "data_dir": str(tmp_path),
                                                    "semantic_match": True})
    with connect(settings) as con:
        cycle = con.sql("SELECT max(cycle) FROM cycles").fetchall()[0][0]
        metrics = score_model.fit(con, settings, cycle)
        features = con.execute("SELECT features FROM model_runs WHERE cycle = ? AND model = 's_prime'",
                               [cycle]).fetchall()[0][0]
    assert "semantic_match" in features
    assert {"validation_mae", "no_semantic_validation_mae", "old_features_validation_mae"} <= set(metrics)
