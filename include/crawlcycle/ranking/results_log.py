"""An engine's result lists: what the user's own search engine showed for each query.

A results-log partition ``<results_log_dir>/dt=YYYY-MM-DD/`` holds ``*.tsv`` files without a header,
``query<TAB>rank<TAB>url[<TAB>score]``, or ``*.parquet`` files with columns query, rank, url and optionally score,
laid out as the query log is (:mod:`crawlcycle.ranking.query_log`). Queries are normalised and URLs canonicalized
like the crawler's; ranks beyond ``top_k`` are dropped; a missing score is 1 / rank. A file with bad rows is
refused with a one-line :class:`ResultsLogError` naming it.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import polars as pl

from crawlcycle.contracts.canonical import UrlRejected, canonicalize
from crawlcycle.contracts.errors import InputError
from crawlcycle.ranking.query_log import normalize_query, partition_dir
from crawlcycle.settings import Settings

SCHEMA = {"query": pl.String, "rank": pl.Int32, "url": pl.String, "score": pl.Float64}


class ResultsLogError(InputError):
    """A results file cannot be read or has bad rows; the message is one line naming the file."""


def read_results(path: Path, settings: Settings) -> pl.DataFrame:
    """query, rank, url, score of one results file (TSV or Parquet), normalised and checked."""
    try:
        if path.suffix == ".parquet":
            df = pl.read_parquet(path)
        else:
            df = pl.read_csv(path, separator="\t", has_header=False, quote_char=None, infer_schema=False)
            if df.width not in (3, 4):
                raise ResultsLogError(f"results {path}: expected 3 or 4 tab-separated columns, got {df.width}")
            df.columns = list(SCHEMA)[:df.width]
    except (OSError, pl.exceptions.PolarsError) as e:
        raise ResultsLogError(f"results {path}: cannot be read ({str(e).splitlines()[0]})") from None
    if "score" not in df.columns:
        df = df.with_columns(score=None)
    try:
        df = df.select(pl.col(name).cast(kind) for name, kind in SCHEMA.items())
    except (pl.exceptions.ColumnNotFoundError, pl.exceptions.InvalidOperationError) as e:
        raise ResultsLogError(f"results {path}: needs columns query, rank (integer), url, score (optional): "
                              f"{str(e).splitlines()[0]}") from None
    bad = df.filter(pl.any_horizontal(pl.col("query", "rank", "url").is_null()) | (pl.col("rank") < 1))
    if bad.height:
        raise ResultsLogError(f"results {path}: {bad.height} rows without a query, rank >= 1 or url; first: "
                              f"{bad.row(0)}")
    df = df.filter(pl.col("rank") <= settings.top_k)
    try:
        urls = [canonicalize(url, rules=settings.url_rules) for url in df["url"]]
    except UrlRejected as e:
        raise ResultsLogError(f"results {path}: URL rejected, {e}") from None
    df = df.with_columns(pl.col("query").map_elements(normalize_query, return_dtype=pl.String),
                         url=pl.Series(urls, dtype=pl.String), score=pl.col("score").fill_null(1 / pl.col("rank")))
    repeated = df.filter(pl.struct("query", "rank").is_duplicated())
    if repeated.height:
        raise ResultsLogError(f"results {path}: query and rank repeat, e.g. {repeated.row(0)}")
    return df


def latest_partition(settings: Settings, day: date | None = None) -> tuple[date, pl.DataFrame]:
    """(its day, its rows) of the results-log partition of ``day``, or of the latest one when ``day`` is None."""
    days = _days(settings)
    if day is None and not days:
        raise ResultsLogError(f"setting results_log_dir: {settings.results_log_dir} holds no partition "
                              "dt=YYYY-MM-DD with files")
    return _read(settings, day or days[-1])


def partition_before(settings: Settings, day: date) -> tuple[date, pl.DataFrame] | None:
    """(its day, its rows) of the latest results-log partition on or before ``day``; None when there is none."""
    days = [d for d in _days(settings) if d <= day]
    return _read(settings, days[-1]) if days else None


def _days(settings: Settings) -> list[date]:
    """The days of the results log's partitions that hold files, in order."""
    if not settings.results_log_dir:
        raise ResultsLogError("setting results_log_dir: empty; name the folder of your engine's result lists "
                              "(dt=YYYY-MM-DD/*.tsv of query<TAB>rank<TAB>url)")
    root = Path(settings.results_log_dir)
    if not root.is_dir():
        raise ResultsLogError(f"setting results_log_dir: {root} is not a folder")
    return sorted(d for f in root.glob("dt=*") if f.is_dir() and (d := _day(f.name)) is not None
                  and (any(f.glob("*.tsv")) or any(f.glob("*.parquet"))))


def _read(settings: Settings, day: date) -> tuple[date, pl.DataFrame]:
    folder = partition_dir(Path(settings.results_log_dir), day)
    files = sorted([*folder.glob("*.tsv"), *folder.glob("*.parquet")])
    if not files:
        raise ResultsLogError(f"results log {folder}: no *.tsv or *.parquet file")
    frames = [read_results(f, settings) for f in files]
    rows = pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)
    repeated = rows.filter(pl.struct("query", "rank").is_duplicated())
    if repeated.height:
        raise ResultsLogError(f"results log {folder}: query and rank repeat across its files, e.g. {repeated.row(0)}")
    return day, rows


def _day(name: str) -> date | None:
    try:
        return date.fromisoformat(name.removeprefix("dt="))
    except ValueError:
        return None
