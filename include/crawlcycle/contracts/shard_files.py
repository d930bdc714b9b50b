"""The files of a shard folder, the contract between the fetch, parse, gate and update tasks.

A shard folder (``<data_dir>/cycles/<cycle>/shard-<k>/`` or under ``shard_storage``) holds, written by:

- plan_shards: ``urls.parquet`` (the shard's batch URLs, ``URLS_SCHEMA``: a refresh with what its stored copy was
  fetched with), ``probes.parquet`` (origins whose robots.txt is fetched
  outside the batch, before any of their URLs may take a slot), ``hosts_in.parquet`` and ``robots_in.parquet`` (the
  stored politeness and robots state of its hosts and their origins), and ``settings.json``, the settings the cycle
  runs with as its begin recorded them (``cycles.settings``), which the fetch and parse tasks run with;
- fetch: ``responses.warc.gz`` and the Parquet files of ``FETCH_OUTPUTS``, plus ``politeness.jsonl``, appended
  while the fetch runs, so that a retried task waits out the delay after the last request of the one that died;
- parse: the Parquet files of ``PARSE_OUTPUTS``, ``pages.parquet``, ``links.parquet`` and ``rejects.parquet``;
- fetch and parse: ``timing.json``, the seconds each took, read by update.

The WARC and the Parquet files of fetch and parse are written whole to a temporary name and renamed into place
(:func:`replacing`), so a reader never sees half of one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from crawlcycle.contracts.errors import InputError

URLS = "urls.parquet"
PROBES = "probes.parquet"
HOSTS_IN = "hosts_in.parquet"
ROBOTS_IN = "robots_in.parquet"
SETTINGS = "settings.json"
WARC = "responses.warc.gz"
POLITENESS_JOURNAL = "politeness.jsonl"
FETCH_LOG = "fetch_log.parquet"
REQUESTS = "requests.parquet"
HOSTS = "hosts.parquet"
ROBOTS = "robots.parquet"
SITEMAPS = "sitemaps.parquet"
SITEMAP_URLS = "sitemap_urls.parquet"
ORIGIN_TRIES = "origin_tries.parquet"
PAGES = "pages.parquet"
LINKS = "links.parquet"
REJECTS = "rejects.parquet"
TIMING = "timing.json"

# The batch URLs of a shard in rank order. ``kind`` is ``new`` or ``refresh`` (a stored page fetched again); a refresh
# carries its stored copy's validators, which make its request conditional, and the payload digest and date of the
# WARC record holding it, which a revisit record refers to (crawlcycle.fetch.http_client.StoredCopy).
URLS_SCHEMA = pa.schema([
    ("url", pa.string()), ("host", pa.string()), ("rank", pa.int32()), ("kind", pa.string()), ("etag", pa.string()),
    ("last_modified", pa.string()), ("payload_digest", pa.string()), ("fetched_at", pa.float64())])

FETCH_OUTPUTS = {
    # One row per input URL; ``outcome`` is what its fetch gave (crawlcycle.contracts.url_states.FetchOutcome). The
    # validators of a 2xx or 304 answer, as sent, and the payload digest of a 2xx body (WARC-Payload-Digest form).
    FETCH_LOG: pa.schema([
        ("url", pa.string()), ("host", pa.string()), ("final_url", pa.string()), ("status", pa.int32()),
        ("redirects", pa.list_(pa.string())), ("bytes", pa.int64()), ("content_type", pa.string()),
        ("started_at", pa.float64()), ("finished_at", pa.float64()), ("elapsed_ms", pa.float64()),
        ("error_class", pa.string()), ("truncated", pa.bool_()), ("outcome", pa.string()), ("etag", pa.string()),
        ("last_modified", pa.string()), ("payload_digest", pa.string())]),
    # One row per request sent (robots.txt and sitemaps included): next ``started_at`` minus previous
    # ``finished_at`` of one host is at least the delay in force. ``attempt`` numbers the runs of the shard's fetch:
    # the requests of one that was killed (or replayed) are kept, for they reached the servers.
    REQUESTS: pa.schema([
        ("host", pa.string()), ("url", pa.string()), ("started_at", pa.float64()), ("finished_at", pa.float64()),
        ("status", pa.int32()), ("error_class", pa.string()), ("new_connection", pa.bool_()),
        ("attempt", pa.int32())]),
    # Politeness state per host, fed back as the ``hosts`` table.
    HOSTS: pa.schema([
        ("host", pa.string()), ("crawl_delay", pa.float64()), ("delay", pa.float64()),
        ("last_response_ms", pa.float64()), ("errors", pa.int32()), ("errors_before", pa.int32()),
        ("backoff_until", pa.float64()), ("last_request_at", pa.float64())]),
    # robots.txt per origin the shard met, fed back as the ``robots`` table.
    ROBOTS: pa.schema([
        ("origin", pa.string()), ("host", pa.string()), ("status", pa.int32()), ("fetched_at", pa.float64()),
        ("robots_txt", pa.string()), ("crawl_delay", pa.float64()), ("sitemaps", pa.list_(pa.string()))]),
    # One row per sitemap file considered (fetched, or skipped with a reason).
    SITEMAPS: pa.schema([
        ("url", pa.string()), ("host", pa.string()), ("depth", pa.int32()), ("status", pa.int32()),
        ("kind", pa.string()), ("entries", pa.int32()), ("admitted", pa.int32()), ("reason", pa.string()),
        ("bad_lastmods", pa.int32())]),
    # URLs listed by sitemaps: canonical when admitted (``reason`` null), as written when refused; an admitted URL's
    # <lastmod> in UTC, if it gave one.
    SITEMAP_URLS: pa.schema([("sitemap", pa.string()), ("url", pa.string()), ("reason", pa.string()),
                             ("lastmod", pa.timestamp("us"))]),
    # One row per origin of the shard's hosts that was tried (a probe, or batch URLs): whether it answered
    # (``error_class`` null) or why not; update turns the rows into the origin's back-off (``origin_tries``).
    ORIGIN_TRIES: pa.schema([
        ("origin", pa.string()), ("host", pa.string()), ("probe", pa.bool_()), ("tried_at", pa.float64()),
        ("error_class", pa.string())]),
}

PARSE_OUTPUTS = {
    # One row per 2xx response parsed; ``reason`` is the first problem found (``parse.html_page.REASONS``). The last
    # four are the response record's: its ETag and Last-Modified headers, WARC-Payload-Digest and WARC-Date (epoch).
    PAGES: pa.schema([
        ("url", pa.string()), ("status", pa.int32()), ("content_type", pa.string()), ("title", pa.string()),
        ("text", pa.string()), ("description", pa.string()), ("date", pa.string()), ("lang", pa.string()),
        ("content_hash", pa.string()), ("simhash", pa.uint64()), ("duplicate_of", pa.string()),
        ("n_links", pa.int32()), ("noindex", pa.bool_()), ("nofollow", pa.bool_()),
        ("canonical_link", pa.string()), ("reason", pa.string()), ("bytes", pa.int64()), ("etag", pa.string()),
        ("last_modified", pa.string()), ("payload_digest", pa.string()), ("fetched_at", pa.float64())]),
    # Distinct (dst, anchor) out-links per page.
    LINKS: pa.schema([("src", pa.string()), ("dst", pa.string()), ("anchor", pa.string()),
                      ("context", pa.string()), ("nofollow", pa.bool_())]),
    # Links that failed canonicalization, or past the per-page cap.
    REJECTS: pa.schema([("src", pa.string()), ("raw", pa.string()), ("reason", pa.string())]),
}


def schema(name: str) -> pa.Schema:
    """The schema of fetch or parse output ``name``."""
    return {**FETCH_OUTPUTS, **PARSE_OUTPUTS}[name]


class DamagedShardFile(InputError):
    """A shard file is missing, cut short or damaged; the message is one line naming it and the task to run again."""


def damaged(path: Path | str, why: str) -> DamagedShardFile:
    name = Path(path).name
    task = "fetch" if name in FETCH_OUTPUTS else "parse" if name in PARSE_OUTPUTS else "plan_shards"
    return DamagedShardFile(f"shard file {path} is missing or damaged ({why}); run the {task} task of "
                            f"{Path(path).parent.name} again")


def check_outputs(folders: list[Path], names: list[str] | dict) -> None:
    """DamagedShardFile for the first of the Parquet files ``names`` in ``folders`` that is missing or not whole (its
    footer is read; damage inside it is found where it is read)."""
    for folder in folders:
        for name in names:
            try:
                pq.read_metadata(Path(folder) / name)
            except (OSError, pa.ArrowException) as e:
                raise damaged(Path(folder) / name, str(e).splitlines()[0][:100]) from None


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``, renamed onto it on success and removed on failure."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(path: Path, table: pa.Table) -> None:
    """Write ``table`` to ``path`` atomically."""
    with replacing(path) as tmp:
        pq.write_table(table, tmp)


def write_rows(folder: Path, name: str, rows: list[dict]) -> Path:
    """Write the rows of fetch output ``name`` into ``folder`` with its schema; return the path."""
    path = Path(folder) / name
    write_table(path, pa.Table.from_pylist(rows, schema=FETCH_OUTPUTS[name]))
    return path
