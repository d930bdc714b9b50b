"""The ``semantic_match`` feature of a (query, page) pair: how close in meaning the query is to what describes the
page before it is fetched, beyond shared words.

A page is described by its URL's words and the anchor texts pointing at it (the ``ANCHORS_PER_PAGE`` most used);
the feature is the best cosine between the query's sentence embedding and any of those texts' (``sentence_embedding``).
Every text is embedded once: vectors are kept in ``text_vectors`` for later cycles.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from crawlcycle.db import query, staged
from crawlcycle.ranking import sentence_embedding
from crawlcycle.ranking.ranker import url_text

ANCHORS_PER_PAGE = 20
PAIR_ROWS = 200_000  # (pair, text) rows scored at once: bounds the gathered vectors' memory


def _vectors(con: duckdb.DuckDBPyConnection, texts: pl.Series) -> tuple[dict[str, int], np.ndarray]:
    """Row index per text and the matrix of their vectors, embedding (and keeping) the texts not seen before."""
    wanted = pl.DataFrame({"text": texts.unique()})
    with staged(con, s_texts=wanted):
        known = con.sql("SELECT v.text, v.vector FROM text_vectors v JOIN s_texts USING (text)").pl()
    new = wanted.join(known.select("text"), on="text", how="anti")["text"].to_list()
    if new:
        added = pl.DataFrame({"text": new, "vector": sentence_embedding.encode(new)},
                             schema={"text": pl.String, "vector": pl.Array(pl.Float32, 384)})
        with staged(con, s_new_vectors=added):
            con.execute("INSERT OR IGNORE INTO text_vectors SELECT text, vector FROM s_new_vectors")
        known = pl.concat([known, added])
    return {t: i for i, t in enumerate(known["text"].to_list())}, known["vector"].to_numpy()


def scores(con: duckdb.DuckDBPyConnection, pairs: pl.DataFrame, queries: pl.DataFrame) -> pl.Series:
    """``semantic_match`` of each row of ``pairs`` (qid, seq), in its order; ``queries`` holds (qid, query)."""
    with staged(con, s_semantic_seqs=pairs.select("seq").unique()):
        described = query(con, "ranking/semantic_match/page_descriptions", anchors=ANCHORS_PER_PAGE)
    described = pl.concat([
        described.filter(pl.col("url").is_null()).select("seq", "text"),
        described.filter(pl.col("url").is_not_null())
        .select("seq", text=url_text(pl.col("url")).str.replace_all(r"[/._\-?=&#:~+]+", " ").str.strip_chars()),
    ]).filter(pl.col("text") != "")
    query_texts = queries.select("qid", "query")
    index, matrix = _vectors(con, pl.concat([described["text"], query_texts["query"]]))
    rows = (pairs.select("qid", "seq").with_row_index("pair")
            .join(query_texts, on="qid").join(described, on="seq")
            .select("pair", q=pl.col("query").replace_strict(index, return_dtype=pl.Int64),
                    t=pl.col("text").replace_strict(index, return_dtype=pl.Int64)))
    best = np.zeros(pairs.height)
    for start in range(0, rows.height, PAIR_ROWS):
        chunk = rows.slice(start, PAIR_ROWS)
        q, t, pair = (chunk[c].to_numpy() for c in ("q", "t", "pair"))
        np.maximum.at(best, pair, np.einsum("ij,ij->i", matrix[q], matrix[t]))
    return pl.Series("semantic_match", np.round(best, 6))
