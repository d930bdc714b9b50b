"""Query-log partitions: ``<query_log_dir>/dt=YYYY-MM-DD/*.tsv`` (``query<TAB>frequency``) or ``*.parquet``.

A cycle ingests the partition of its data interval; re-ingesting a partition replaces it.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

_SPACE = re.compile(r"\s+")


def normalize_query(text: str) -> str:
    """The one normalisation applied to query text everywhere: NFKC, lower case, single spaces."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def partition_dir(query_log_dir: str | Path, day: date) -> Path:
    return Path(query_log_dir) / f"dt={day.isoformat()}"


def read_partition(query_log_dir: str | Path, day: date) -> pl.DataFrame:
    """Aggregated (query, frequency) of one partition; empty when the partition does not exist."""
    folder = partition_dir(query_log_dir, day)
    frames = []
    for path in sorted(folder.glob("*.tsv")):
        frames.append(pl.read_csv(path, separator="\t", has_header=False, new_columns=["query", "frequency"],
                                  schema_overrides={"query": pl.String, "frequency": pl.Float64},
                                  quote_char=None))
    for path in sorted(folder.glob("*.parquet")):
        frames.append(pl.read_parquet(path, columns=["query", "frequency"]))
    if not frames:
        return pl.DataFrame(schema={"query": pl.String, "frequency": pl.Float64})
    df = pl.concat(frames, how="vertical_relaxed")
    bad = df.filter(pl.col("query").is_null() | pl.col("frequency").is_null() | (pl.col("frequency") < 0))
    if bad.height:
        raise ValueError(f"query log {folder}: {bad.height} rows without a query or with a bad frequency, "
                         f"first: {bad.row(0)}")
    return (df.with_columns(pl.col("query").map_elements(normalize_query, return_dtype=pl.String))
              .filter(pl.col("query") != "")
              .group_by("query").agg(pl.col("frequency").sum()).sort("query"))


def ingest_partition(con: duckdb.DuckDBPyConnection, query_log_dir: str | Path, day: date) -> int:
    """Replace partition ``day`` of the query_log table with the files on disk; return its row count."""
    df = read_partition(query_log_dir, day)
    con.execute("DELETE FROM query_log WHERE partition = ?", [day])
    con.register("s_queries", df)
    con.execute("INSERT INTO query_log (partition, query, frequency) SELECT ?, query, frequency FROM s_queries",
                [day])
    con.unregister("s_queries")
    return df.height
