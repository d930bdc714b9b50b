"""The single writer: merge every shard's fetch and parse output into DuckDB in one transaction.

DuckDB reads the shards' Parquet files itself (``sql/pipeline/update/stage_*_files.sql``); only the columns that find
repeats of stored pages come out to Python, for the SimHash index. A stored page fetched again (a refresh) is a check
of its stored copy (``check_pages.sql``): not modified, unchanged, changed (its new row and links replace the old),
gone or moved (it leaves ``pages``), or failed; a re-run of the cycle puts back what its checks replaced.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import host_of
from crawlcycle.db import query, run_sql, scalar, staged, transaction
from crawlcycle.ordering import registry
from crawlcycle.parse.simhash import NearDuplicateIndex
from crawlcycle.settings import Settings

# The temp tables and macro the merge stages, dropped when it ends.
_STAGED = ("s_fetch_log", "s_requests", "s_hosts", "s_robots", "s_sitemaps", "s_sitemap_urls", "s_origin_tries",
           "s_pages", "s_redirects", "s_found_links", "s_links", "s_new", "s_rejects", "s_checks")


def shard_index(shard_dir: Path) -> int:
    return int(Path(shard_dir).name.rsplit("-", 1)[1])


def mark_stored_duplicates(con: duckdb.DuckDBPyConnection, pages: pl.DataFrame) -> pl.DataFrame:
    """Set duplicate_of on pages repeating a page crawled in an earlier cycle: the same content hash,
    else a SimHash within NEAR_DUPLICATE_BITS (pages of this batch were compared by the parse stage); a stored page
    naming the new one as its canonical is not its original (the stored page folds into it instead, merge_parse).
    A stored page fetched again is compared with the others, not with its own stored copy. ``exact_copy`` tells the
    pages whose content hash equals their original's, or their own stored copy's (an unchanged refresh)."""
    stored = con.sql("SELECT url, content_hash, simhash, canonical_link FROM pages WHERE duplicate_of IS NULL "
                     "ORDER BY cycle, url").pl()
    again = stored.filter(pl.col("url").is_in(pages["url"].implode()))
    own = dict(zip(again["url"], again["content_hash"], strict=True))
    stored = stored.filter(~pl.col("url").is_in(again["url"].implode()))
    by_hash = {h: u for h, u in zip(stored["content_hash"], stored["url"], strict=True) if h is not None}
    names = dict(zip(stored["url"], stored["canonical_link"], strict=True))
    near = NearDuplicateIndex()
    for fingerprint, url in zip(stored["simhash"], stored["url"], strict=True):
        if fingerprint is not None:
            near.add(fingerprint, url)
    found, exact = [], []
    for url, dup, digest, fingerprint in zip(pages["url"], pages["duplicate_of"], pages["content_hash"],
                                             pages["simhash"], strict=True):
        same = by_hash.get(digest)
        same = same if names.get(same) != url else None
        similar = near.find(fingerprint) if dup is None and same is None and fingerprint is not None else None
        found.append(dup or same or (similar if names.get(similar) != url else None))
        exact.append(same is not None or (digest is not None and own.get(url) == digest))
    return pages.with_columns(duplicate_of=pl.Series(found, dtype=pl.String),
                              exact_copy=pl.Series(exact, dtype=pl.Boolean))


def merge_shards(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, shard_dirs: list[Path]) -> dict:
    """Replace cycle ``cycle``'s output in the tables with the shards' files; return counts."""
    dirs = sorted(Path(d) for d in shard_dirs)
    # Each shard file as a list over the shards, a parameter named like the file (fetch_log.parquet: $fetch_log).
    files = {Path(name).stem: [str(d / name) for d in dirs]
             for name in (*shard_files.FETCH_OUTPUTS, *shard_files.PARSE_OUTPUTS)}
    counts = {"fetch_rows": 0, "pages": 0, "links": 0}
    shard_files.check_outputs(dirs, [*shard_files.FETCH_OUTPUTS, *shard_files.PARSE_OUTPUTS])
    con.create_function("host_of", host_of, ["VARCHAR"], "VARCHAR")
    try:
        with transaction(con):
            run_sql(con, "pipeline/update/rollback_cycle", cycle=cycle)
            registry.clear_cycle(con, cycle)
            if dirs:
                run_sql(con, "pipeline/update/stage_fetch_files", cycle=cycle, shards=[shard_index(d) for d in dirs],
                        **files)
                counts = {"fetch_rows": scalar(con, "SELECT count(*) FROM s_fetch_log"),
                          "pages": scalar(con, "SELECT count(*) FROM read_parquet(?)", [files["pages"]]),
                          "links": scalar(con, "SELECT count(*) FROM read_parquet(?)", [files["links"]])}
            if counts["fetch_rows"]:
                run_sql(con, "pipeline/update/merge_fetch", cycle=cycle, url_attempts=settings.url_attempts,
                        origin_retry_cycles=settings.origin_retry_cycles, origin_park_after=settings.origin_park_after,
                        origin_park_cycles=settings.origin_park_cycles, path_refusals=settings.path_refusals)
                fetched = mark_stored_duplicates(con, query(con, "pipeline/update/fetched_pages", pages=files["pages"]))
                with staged(con, s_duplicates=fetched.select("file_index", "row_index", "duplicate_of", "exact_copy")):
                    run_sql(con, "pipeline/update/stage_parse_files", **files)
                run_sql(con, "pipeline/update/check_pages", cycle=cycle)
                run_sql(con, "pipeline/update/discovered_urls")
                run_sql(con, "pipeline/update/merge_parse", cycle=cycle, max_urls_per_host=settings.max_urls_per_host,
                        scope=settings.scope_rules())
            run_sql(con, "pipeline/update/cycle_figures", cycle=cycle)
    except duckdb.Error as e:  # damage inside a file whose footer is whole: DuckDB's message names the file
        path = next((f for paths in files.values() for f in paths if f in str(e)), None)
        if path is None:
            raise
        raise shard_files.damaged(path, str(e).splitlines()[0][:100]) from None
    finally:
        for table in _STAGED:
            con.execute(f"DROP TABLE IF EXISTS {table}")
        con.execute("DROP MACRO TABLE IF EXISTS shard_rows")
        con.remove_function("host_of")
    return counts
