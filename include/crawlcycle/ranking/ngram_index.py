"""The n-gram index over known URLs (table ``url_ngrams``) and the matching of queries against it.

A page's n-grams are the word n-grams, n = 1..``ngram_max``, of its URL tokens (host and path, percent-decoded)
and of each anchor text pointing at it, with the ranker's tokenizer (``ranker.terms``: stopwords dropped,
so 'the art of war' and 'Art of War' give the same n-grams). A query matches a page when at least
``match_share`` (rho) of the query's n-grams are among the page's. The index is keyed by n-gram, so matching
costs one lookup per query n-gram instead of a scan of every (query, page) pair.

Maintenance is incremental: each refit indexes the URLs not indexed yet and the anchors of the links the
cycle added (n-grams a URL already has from that source are not stored twice), tagging the rows with the
cycle so that a re-run replaces them.
"""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, scalar, staged
from crawlcycle.ranking.ranker import terms, url_text
from crawlcycle.settings import Settings

ALL = 2**31 - 1  # no limit
CHUNK_ROWS = 200_000  # URLs or links tokenized at once: bounds memory on a large first index


def ngrams(frame: pl.DataFrame, key: str, text: str, g: int) -> pl.DataFrame:
    """Distinct (key, gram) pairs: the word n-grams, n = 1..g, of each row's ``text``."""
    tokens = (frame.select(key, term=terms(pl.col(text))).with_row_index("row")
              .explode("term").drop_nulls("term"))
    grams, joined = [tokens.select(key, gram="term")], pl.col("term")
    for n in range(1, g):
        # rows are contiguous after explode: the term n places on belongs to the same text if its row matches
        same_text = pl.col("row").shift(-n) == pl.col("row")
        joined = joined + " " + pl.col("term").shift(-n)
        grams.append(tokens.select(key, gram=pl.when(same_text).then(joined)).drop_nulls("gram"))
    return pl.concat(grams).unique()


def update(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, int]:
    """Index the URLs not indexed yet and the anchors of cycle ``cycle``'s links; a re-run replaces its rows."""
    run_sql(con, "ranking/ngram_index/unindex_cycle", cycle=cycle)
    urls = con.sql("SELECT url, discovery_seq AS seq FROM frontier WHERE ngram_cycle IS NULL ORDER BY seq").pl()
    anchors = query(con, "ranking/ngram_index/cycle_anchors", cycle=cycle)
    before = scalar(con, "SELECT count(*) FROM url_ngrams")
    # The chunks' n-grams are gathered first and checked against the index in one pass: a check per chunk would
    # scan the whole index once per chunk, which grows with the square of the crawl.
    con.execute("CREATE OR REPLACE TEMP TABLE s_new_grams (gram VARCHAR, seq BIGINT, source VARCHAR)")
    for source, frame, text in (("url", urls.with_columns(text=url_text(pl.col("url"))), "text"),
                                ("anchor", anchors, "anchor")):
        for start in range(0, frame.height, CHUNK_ROWS):
            with staged(con, s_grams=ngrams(frame.slice(start, CHUNK_ROWS), "seq", text, settings.ngram_max)):
                con.execute("INSERT INTO s_new_grams SELECT gram, seq, ? FROM s_grams", [source])
    run_sql(con, "ranking/ngram_index/add_ngrams", cycle=cycle)
    con.execute("UPDATE frontier SET ngram_cycle = ? WHERE ngram_cycle IS NULL", [cycle])
    return {"ngram_urls": urls.height, "ngram_anchors": anchors.height,
            "ngram_rows": scalar(con, "SELECT count(*) FROM url_ngrams") - before}


def match(con: duckdb.DuckDBPyConnection, settings: Settings, queries: pl.DataFrame, share: float,
          per_query: int = ALL, max_df: int = ALL) -> pl.DataFrame:
    """Pages of the temp table ``s_scope`` (seq) matching each query of ``queries`` (qid, query): (qid, seq,
    share, url_share, anchor_share), the shares of the query's n-grams found among the page's n-grams (all,
    URL's, anchors'), for pages holding at least ``share`` of them; at most ``per_query`` pages per query.
    Only n-grams on at most ``max_df`` URLs propose pages: a sample for training, not for sketches."""
    with staged(con, s_query_grams=ngrams(queries, "qid", "query", settings.ngram_max)):
        run_sql(con, "ranking/ngram_index/match_candidates", share=share, max_df=max_df)
        with staged(con, s_shares=query(con, "ranking/ngram_index/ngram_shares")):
            con.execute("DROP TABLE s_candidates")
            return query(con, "ranking/ngram_index/match", share=share, per_query=per_query)
