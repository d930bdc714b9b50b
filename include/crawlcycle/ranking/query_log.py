"""Query-log partitions ``<query_log_dir>/dt=YYYY-MM-DD/`` (``*.tsv``, or ``*.parquet``).

Each file holds one of two forms, told apart by its number of tab-separated fields (TSV) or its column
names (Parquet):

- aggregated: ``query<TAB>frequency``; Parquet columns query, frequency.
- impressions: ``time<TAB>query<TAB>url<TAB>rank<TAB>clicked``; Parquet columns time, query, url, rank,
  clicked. One row is one result URL shown for one search. ``time`` is ISO 8601 (``T`` or a space between
  date and time, optional fraction, optional ``Z`` or offset; stored as naive UTC), ``rank`` an integer
  >= 1, ``clicked`` one of 1/0/true/false.

A TSV file has no header; a first line that names the form's columns (``query<TAB>frequency``, or
``timestamp<TAB>query<TAB>url<TAB>rank<TAB>clicked``, any case) is taken for one and skipped.

A partition may mix both forms. In the table ``query_log``, ``sum(frequency)`` over a query's rows is its
number of searches in either form: aggregated rows carry their frequency (rows of one query summed), and
an impression row carries s/n, n being the rows of its (time, query) pair and s the searches among them
(the rows of the pair's most repeated rank: two searches in one second show rank 1 twice). Impression
rows also keep time, shown_url (canonical form; NULL when the URL is not admitted), rank and clicked;
aggregated rows leave those NULL. Queries are normalised by :func:`normalize_query`, and
rows whose query is empty after it are dropped.

A cycle ingests the partition of its data interval. When it has none (no folder, or no file in it), the setting
``missing_query_log`` decides: ``latest`` ingests the latest earlier partition's files in its place, ``empty`` an
empty log, ``fail`` and ``wait`` stop the cycle (``wait``: after an Airflow sensor waited ``query_log_wait``
seconds for it). ``cycles.query_partition`` keeps the partition read (NULL: none). Re-ingesting replaces the
partition; a file with bad rows fails the load with a one-line ``QueryLogError`` and the partition keeps its
previous rows.
"""

from __future__ import annotations

import logging
import re
import shutil
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from crawlcycle.contracts.canonical import UrlRejected, canonicalize
from crawlcycle.contracts.errors import InputError
from crawlcycle.db import query, run_sql, staged, transaction
from crawlcycle.settings import Settings, SettingsError

AGGREGATED = ("query", "frequency")
IMPRESSIONS = ("time", "query", "url", "rank", "clicked")
SCHEMA = {"query": pl.String, "frequency": pl.Float64, "time": pl.Datetime("us"), "shown_url": pl.String,
          "rank": pl.Int32, "clicked": pl.Boolean}
_SPACE = re.compile(r"\s+")
_TIME = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?$"
_CLICKED = {"1": True, "true": True, "0": False, "false": False}
# TSV header lines taken for a header: the names docs/explanation/queries.md gives and the Parquet column names
_HEADERS = {AGGREGATED, IMPRESSIONS, ("timestamp", *IMPRESSIONS[1:])}
_log = logging.getLogger(__name__)


class QueryLogError(InputError):
    """A query-log file cannot be read or has bad rows; the message is one line naming the file."""


def normalize_query(text: str) -> str:
    """The one normalisation applied to query text everywhere: NFKC, lower case, single spaces."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def partition_dir(query_log_dir: str | Path, day: date) -> Path:
    return Path(query_log_dir) / f"dt={day.isoformat()}"


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.tsv")) + sorted(folder.glob("*.parquet"))


def partition_exists(settings: Settings, day: date) -> bool:
    """Whether partition ``day`` has a file (what the Airflow sensor of ``missing_query_log = wait`` asks);
    SettingsError when the query-log folder itself does not exist: a wrong path, not a day without queries."""
    folder = Path(settings.query_log_dir)
    if not folder.is_dir():
        given = settings.sources.get("query_log_dir", "the default")
        raise SettingsError(f"setting query_log_dir: {folder}: no such folder (from {given}); a missing day's "
                            "partition is what missing_query_log is for, a missing folder is a wrong path")
    return bool(_files(partition_dir(folder, day)))


def source_partition(settings: Settings, day: date) -> date | None:
    """The partition a cycle of ``day`` reads: its own, else as ``missing_query_log`` says (None: an empty log);
    QueryLogError when the setting says to stop."""
    if partition_exists(settings, day):
        return day
    missing = f"query log: no partition for {day} in {partition_dir(settings.query_log_dir, day)}"
    if settings.missing_query_log in ("fail", "wait"):
        raise QueryLogError(f"{missing} (setting missing_query_log = {settings.missing_query_log})")
    if settings.missing_query_log == "empty":
        return None
    earlier = sorted(d for d in (_partition_day(f) for f in Path(settings.query_log_dir).glob("dt=*"))
                     if d is not None and d < day and partition_exists(settings, d))
    return earlier[-1] if earlier else None


def _partition_day(folder: Path) -> date | None:
    try:
        return date.fromisoformat(folder.name.removeprefix("dt="))
    except ValueError:
        return None


@dataclass(frozen=True)
class Partition:
    """One partition read from disk, as the rows ``query_log`` stores (columns of ``SCHEMA``)."""

    rows: pl.DataFrame
    empty_queries: int  # rows dropped because their query is empty once normalised
    rejected_urls: int  # impression rows kept with shown_url NULL because canonicalize rejected the URL


def read_partition(settings: Settings, day: date) -> Partition:
    """All files of partition ``day`` under ``settings.query_log_dir``; empty when the partition does not exist."""
    frames = [pl.DataFrame(schema=SCHEMA)]
    for path in _files(partition_dir(settings.query_log_dir, day)):
        try:
            columns, raw = _read_tsv(path) if path.suffix == ".tsv" else _read_parquet(path)
        except pl.exceptions.PolarsError as e:
            raise QueryLogError(f"query log {path}: {str(e).splitlines()[0]}") from e
        except OSError as e:
            raise QueryLogError(f"query log {path}: cannot be read ({e.strerror or e})") from e
        frames.append(_parse(path, columns, raw))
    df = pl.concat(frames)
    df = df.with_columns(_map_unique(df["query"], normalize_query))
    empty_queries = df.filter(pl.col("query") == "").height
    df = df.filter(pl.col("query") != "")
    df = df.with_columns(_map_unique(df["shown_url"], _canonical(settings)))
    impressions = df.filter(pl.col("time").is_not_null())
    rejected_urls = impressions.filter(pl.col("shown_url").is_null()).height
    # each query's rows added smallest first: a parallel group-by adds them in no defined order
    aggregated = (df.filter(pl.col("time").is_null()).group_by("query").agg(pl.col("frequency").sort().sum())
                  .with_columns(pl.lit(None, SCHEMA[c]).alias(c) for c in ("time", "shown_url", "rank", "clicked")))
    # Searches of one query in the same second share a (time, query) pair: each shows every rank once, so
    # the searches of the pair are the rows of its most repeated rank.
    searches = pl.len().over("time", "query", "rank").max().over("time", "query")
    impressions = impressions.with_columns(frequency=searches / pl.len().over("time", "query"))
    rows = pl.concat([aggregated.select(*SCHEMA), impressions.select(*SCHEMA)]).sort("query", "time", "rank",
                                                                                      nulls_last=True)
    return Partition(rows, empty_queries, rejected_urls)


def _read_tsv(path: Path) -> tuple[tuple[str, ...], pl.DataFrame]:
    """Non-blank lines as (line number, fields), a header line skipped; the most common field count tells the form."""
    lines = pl.read_lines(path, row_index_name="row", row_index_offset=1)
    raw = lines.filter(pl.col("line") != "").select("row", pl.col("line").str.split("\t").alias("fields"))
    if raw.height and raw["row"][0] == 1:
        names = tuple(f.strip().lower() for f in raw["fields"][0].to_list())
        if names and (names[0].lstrip("\ufeff"), *names[1:]) in _HEADERS:
            raw = raw.slice(1)
    if not raw.height:
        return AGGREGATED, raw
    width = raw["fields"].list.len().mode().min()
    forms = {2: AGGREGATED, 5: IMPRESSIONS}
    if width not in forms:
        raise QueryLogError(f"query log {path}: lines have {width} tab-separated fields; "
                         f"expected 2 (query, frequency) or 5 (time, query, url, rank, clicked)")
    return forms[width], raw


def _read_parquet(path: Path) -> tuple[tuple[str, ...], pl.DataFrame]:
    """Rows as (row number, fields as text), so both file types share one validation."""
    names = pl.read_parquet_schema(path)
    columns = next((form for form in (IMPRESSIONS, AGGREGATED) if set(form) <= names.keys()), None)
    if columns is None:
        raise QueryLogError(f"query log {path}: columns {sorted(names)}; expected "
                         f"({', '.join(AGGREGATED)}) or ({', '.join(IMPRESSIONS)})")
    df = pl.read_parquet(path, columns=list(columns))
    if "time" in columns and isinstance(df.schema["time"], pl.Datetime):
        time = pl.col("time")
        if df.schema["time"].time_zone:
            time = time.dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        df = df.with_columns(time.dt.to_string("%Y-%m-%dT%H:%M:%S%.f"))
    fields = pl.concat_list(pl.col(c).cast(pl.String) for c in columns).alias("fields")
    return columns, df.select(pl.int_range(1, pl.len() + 1).alias("row"), fields)


def _parse(path: Path, columns: tuple[str, ...], raw: pl.DataFrame) -> pl.DataFrame:
    """Typed rows of one file (query not yet normalised, url not yet canonical); QueryLogError on any bad row."""
    field = {c: pl.col("fields").list.get(i, null_on_oob=True) for i, c in enumerate(columns)}
    query = field["query"]
    checks = [(pl.col("fields").list.len() != len(columns), f"expected {len(columns)} fields"),
              (query.is_null() | (query == ""), "missing query")]
    if columns == AGGREGATED:
        frequency = field["frequency"].str.strip_chars().cast(pl.Float64, strict=False)
        values = {"query": query, "frequency": frequency}
        checks.append((frequency.is_null() | ~frequency.is_finite() | (frequency < 0), "bad frequency"))
    else:
        text = field["time"].str.strip_chars()
        iso = text.str.replace(" ", "T", literal=True).str.replace("Z$", "+00:00")
        aware = iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%z", time_unit="us", strict=False)
        naive = iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", time_unit="us", strict=False)
        time = pl.when(text.str.contains(_TIME)).then(
            pl.coalesce(aware.dt.convert_time_zone("UTC").dt.replace_time_zone(None), naive))
        rank = field["rank"].str.strip_chars().str.to_integer(strict=False)
        clicked = field["clicked"].str.strip_chars().str.to_lowercase().replace_strict(
            _CLICKED, default=None, return_dtype=pl.Boolean)
        values = {"query": query, "time": time, "shown_url": field["url"].fill_null(""), "rank": rank,
                  "clicked": clicked}
        checks += [(time.is_null(), "bad timestamp"), (rank.is_null() | ~rank.is_between(1, 2**31 - 1), "bad rank"),
                   (clicked.is_null(), "bad clicked")]
    problem = pl.coalesce(pl.when(condition).then(pl.lit(reason)) for condition, reason in checks)
    bad = raw.filter(problem.is_not_null()).with_columns(problem.alias("problem"))
    if bad.height:
        first = bad.row(0, named=True)
        raise QueryLogError(f"query log {path}: {bad.height} bad rows of {raw.height}; first, row {first['row']} "
                         f"({first['problem']}): {first['fields']!r}")
    return raw.select(**{c: values.get(c, pl.lit(None)).cast(t) for c, t in SCHEMA.items()})


def _canonical(settings: Settings) -> Callable[[str], str | None]:
    def canonical(url: str) -> str | None:
        try:
            return canonicalize(url, rules=settings.url_rules)
        except UrlRejected:
            return None
    return canonical


def _map_unique(column: pl.Series, fn: Callable[[str], str | None]) -> pl.Expr:
    """``fn`` applied once per distinct non-null value (logs repeat queries and URLs many times)."""
    distinct = column.drop_nulls().unique()
    mapping = dict(zip(distinct.to_list(), map(fn, distinct.to_list()), strict=True))
    return pl.col(column.name).replace_strict(mapping, default=None, return_dtype=pl.String)


def ingest_partition(con: duckdb.DuckDBPyConnection, settings: Settings, day: date,
                     source: date | None = None) -> int:
    """Replace partition ``day`` of table query_log with the files of partition ``source`` (default: ``day``) under
    ``settings.query_log_dir``; return the rows written. Nothing changes when a file is bad."""
    part = read_partition(settings, source or day)
    with staged(con, s_query_log=part.rows), transaction(con):
        run_sql(con, "ranking/query_log/ingest", partition=day)
    _log.info("query log %s (files of %s): %d rows, %d empty queries dropped, %d shown URLs not admitted",
              day, source or day, part.rows.height, part.empty_queries, part.rejected_urls)
    return part.rows.height


def page_impressions(con: duckdb.DuckDBPyConnection, partition: date, top_k: int) -> pl.DataFrame:
    """Per shown URL of ``partition``: views (times shown at rank <= ``top_k``) and clicks (at any rank)."""
    return query(con, "ranking/query_log/page_impressions", top_k=top_k, partition=partition)


def write_partitions(query_file: Path, folder: Path, days: list[date]) -> None:
    """Replace ``folder`` with one partition per day of ``days``, each a copy of ``query_file``: cycles that replay
    one workload each read the same queries."""
    shutil.rmtree(folder, ignore_errors=True)
    for day in days:
        part = partition_dir(folder, day)
        part.mkdir(parents=True)
        shutil.copyfile(query_file, part / f"queries{query_file.suffix}")
