"""The frontier evidence index (tables ``evidence_postings``, ``evidence_lengths``) and the BM25 matching of needy
queries against it (``match_mode = 'evidence'``).

What is known of a URL before it is fetched, as term frequencies per field (the ranker's tokenizer,
``ranker.terms``): ``url`` (host and path, percent-decoded), ``anchor`` (every anchor text pointing at it),
``context`` (the words around each such anchor, as the parser keeps them) and ``title`` (the titles of the crawled
pages linking to it). A query's candidates are the pages of a scope ranked by BM25F over that evidence, where
every query term counts and none is required, plus the pages the query's current results link to (Shark-Search's
inherited relevance: a good result's out-links tend to be relevant too).

Maintenance is incremental, like the ranker's: each refit indexes the URLs not indexed yet and the evidence of the
links the cycle added, tagging the rows with the cycle so that a re-run replaces them.
"""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, scalar, staged
from crawlcycle.ranking.ranker import terms, url_text
from crawlcycle.settings import EVIDENCE_FIELDS, Settings

CHUNK_ROWS = 200_000  # URLs or links tokenized at once: bounds memory on a large first index


def _write(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, cycle: int) -> None:
    """Tokenize (seq, field, content) rows and add their term frequencies and lengths, tagged with ``cycle``."""
    for start in range(0, frame.height, CHUNK_ROWS):
        tokens = (frame.slice(start, CHUNK_ROWS).select("seq", "field", term=terms(pl.col("content")))
                  .explode("term").drop_nulls("term"))
        with staged(con, s_tf=tokens.group_by("term", "seq", "field").agg(tf=pl.len().cast(pl.Int32)),
                    s_len=tokens.group_by("seq", "field").agg(length=pl.len().cast(pl.Int32))):
            con.execute("INSERT INTO evidence_postings SELECT term, seq, field, tf, ? FROM s_tf ORDER BY ALL", [cycle])
            con.execute("INSERT INTO evidence_lengths SELECT seq, field, length, ? FROM s_len ORDER BY ALL", [cycle])


def update(con: duckdb.DuckDBPyConnection, cycle: int) -> dict[str, int]:
    """Index the URLs not indexed yet and the evidence of cycle ``cycle``'s links; a re-run replaces its rows."""
    run_sql(con, "ranking/evidence_index/unindex_cycle", cycle=cycle)
    urls = con.sql("SELECT discovery_seq AS seq, url FROM frontier WHERE evidence_cycle IS NULL ORDER BY seq").pl()
    links = query(con, "ranking/evidence_index/new_links", cycle=cycle)
    before = scalar(con, "SELECT count(*) FROM evidence_postings")
    _write(con, urls.select("seq", field=pl.lit("url"), content=url_text(pl.col("url"))), cycle)
    _write(con, links, cycle)
    con.execute("UPDATE frontier SET evidence_cycle = ? WHERE evidence_cycle IS NULL", [cycle])
    return {"evidence_urls": urls.height, "evidence_links": links.height,
            "evidence_rows": scalar(con, "SELECT count(*) FROM evidence_postings") - before}


def candidates(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, queries: pl.DataFrame) -> pl.DataFrame:
    """Candidate pages of the temp table ``s_scope`` (seq) for each query of ``queries`` (qid, query): (qid, seq,
    evidence_score, term_share, via_results), at most ``sketch_candidates`` by evidence and as many again by the
    score of the query's cycle-``cycle`` results linking to them."""
    query_terms = queries.select("qid", term=terms(pl.col("query"))).explode("term").drop_nulls("term").unique()
    weights, bs = settings.field_values("evidence_weights"), settings.field_values("evidence_b")
    with staged(con, s_queries=queries.select("qid", "query"), s_query_terms=query_terms):
        return query(con, "ranking/evidence_index/candidates", cycle=cycle, fields=list(EVIDENCE_FIELDS),
                     weights=[weights[f] for f in EVIDENCE_FIELDS], bs=[bs[f] for f in EVIDENCE_FIELDS],
                     k1=settings.bm25_k1, depth=settings.bm25_depth, per_query=settings.sketch_candidates)


def stored_candidates(con: duckdb.DuckDBPyConnection, cycle: int, queries: pl.DataFrame) -> pl.DataFrame | None:
    """What :func:`candidates` gives for ``queries`` (qid, query) when they are cycle ``cycle``'s needy queries and
    select_needy stored their candidates (table ``needy_candidates``), else None."""
    with staged(con, s_queries=queries.select("qid", "query")):
        found = query(con, "ranking/evidence_index/stored_candidates", cycle=cycle)
    return found if found.height else None
