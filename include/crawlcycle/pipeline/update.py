"""The single writer: merge every shard's fetch and parse output into DuckDB in one transaction."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from crawlcycle.db import run_sql
from crawlcycle.parse.canonical import host_of
from crawlcycle.parse.simhash import NearDuplicateIndex
from crawlcycle.pipeline import shard_files
from crawlcycle.settings import Settings

PAGE_COLUMNS = ["url", "status", "content_type", "title", "text", "description", "lang", "content_hash",
                "simhash", "duplicate_of", "n_links", "noindex", "reason", "bytes"]


def _read(dirs: list[Path], name: str, shard_column: bool = False) -> pl.DataFrame:
    frames = []
    for d in dirs:
        df = pl.read_parquet(d / name)
        if shard_column:
            df = df.with_columns(shard=pl.lit(shard_index(d), dtype=pl.Int32))
        frames.append(df)
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def shard_index(shard_dir: Path) -> int:
    return int(Path(shard_dir).name.rsplit("-", 1)[1])


def discovered_urls(fetch_log: pl.DataFrame, links: pl.DataFrame, sitemap_urls: pl.DataFrame) -> pl.DataFrame:
    """URLs this cycle discovered, in discovery order: followed links, redirect targets, then sitemap entries."""
    followed = links.filter(~pl.col("nofollow")).select("src", url="dst", source=pl.lit("link"))
    redirected = (fetch_log.filter(pl.col("outcome").str.starts_with("redirected") & pl.col("final_url").is_not_null())
                  .select(src="url", url="final_url", source=pl.lit("redirect")))
    listed = sitemap_urls.filter(pl.col("reason").is_null()).select(src="sitemap", url="url",
                                                                     source=pl.lit("sitemap"))
    new = pl.concat([followed, redirected, listed]).with_row_index("seq")
    return new.with_columns(host=pl.col("url").map_elements(host_of, return_dtype=pl.String))


def redirect_links(fetch_log: pl.DataFrame) -> pl.DataFrame:
    """A redirect is stored as a link from the requested URL to its target (empty anchor)."""
    return (fetch_log.filter(pl.col("outcome").str.starts_with("redirected") & pl.col("final_url").is_not_null())
            .select(src="url", dst="final_url", anchor=pl.lit(""), context=pl.lit("redirect"),
                    nofollow=pl.lit(False)))


def mark_stored_duplicates(con: duckdb.DuckDBPyConnection, pages: pl.DataFrame) -> pl.DataFrame:
    """Set duplicate_of on pages repeating a page crawled in an earlier cycle: the same content hash,
    else a SimHash within NEAR_DUPLICATE_BITS (pages of this batch were compared by the parse stage).
    ``exact_copy`` tells the pages whose content hash equals a stored page's."""
    stored = con.sql("SELECT url, content_hash, simhash FROM pages WHERE duplicate_of IS NULL "
                     "ORDER BY cycle, url").pl()
    by_hash = {h: u for h, u in zip(stored["content_hash"], stored["url"], strict=True) if h is not None}
    near = NearDuplicateIndex()
    for fingerprint, url in zip(stored["simhash"], stored["url"], strict=True):
        if fingerprint is not None:
            near.add(fingerprint, url)
    exact = [by_hash.get(digest) for digest in pages["content_hash"]]
    found = [dup or same or (near.find(fp) if fp is not None else None)
             for dup, same, fp in zip(pages["duplicate_of"], exact, pages["simhash"], strict=True)]
    return pages.with_columns(duplicate_of=pl.Series(found, dtype=pl.String),
                              exact_copy=pl.Series([e is not None for e in exact], dtype=pl.Boolean))


def merge_shards(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, shard_dirs: list[Path]) -> dict:
    """Replace cycle ``cycle``'s output in the tables with the shards' files; return counts."""
    dirs = sorted(Path(d) for d in shard_dirs)
    fetch_log = _read(dirs, shard_files.FETCH_LOG, shard_column=True)
    pages = _read(dirs, "pages.parquet")
    links = _read(dirs, "links.parquet")
    con.execute("BEGIN")
    try:
        run_sql(con, "stages/rollback_cycle", cycle=cycle)
        if fetch_log.height:
            con.register("s_fetch_log", fetch_log)
            for table, name in (("s_requests", shard_files.REQUESTS), ("s_hosts", shard_files.HOSTS),
                                ("s_robots", shard_files.ROBOTS), ("s_sitemaps", shard_files.SITEMAPS)):
                con.register(table, _read(dirs, name))
            run_sql(con, "stages/merge_fetch", cycle=cycle, retry_limit=settings.retry_limit)
            sitemap_urls = _read(dirs, shard_files.SITEMAP_URLS)
            fetched = mark_stored_duplicates(con, pages.filter(pl.col("status").is_between(200, 299))
                                             .select(PAGE_COLUMNS)).with_columns(
                host=pl.col("url").map_elements(host_of, return_dtype=pl.String))
            # An exact copy of a stored page brings nothing new: its links are not merged twice.
            copies = fetched.filter("exact_copy")["url"]
            page_links = (links.select("src", "dst", "anchor", "context", "nofollow")
                          .filter(~pl.col("src").is_in(copies.implode())))
            all_links = pl.concat([page_links, redirect_links(fetch_log)], how="vertical_relaxed")
            con.register("s_pages", fetched)
            con.register("s_links", all_links.unique(["src", "dst", "anchor"], keep="first", maintain_order=True))
            con.register("s_new", discovered_urls(fetch_log, all_links, sitemap_urls))
            refused = sitemap_urls.filter(pl.col("reason").is_not_null()).select(src="sitemap", raw="url",
                                                                                 reason="reason")
            con.register("s_rejects", pl.concat([_read(dirs, "rejects.parquet").select("src", "raw", "reason"),
                                                 refused], how="vertical_relaxed"))
            run_sql(con, "stages/merge_parse", cycle=cycle, max_urls_per_host=settings.max_urls_per_host)
        run_sql(con, "stages/cycle_figures", cycle=cycle)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        for name in ("s_fetch_log", "s_requests", "s_hosts", "s_robots", "s_sitemaps", "s_pages", "s_links", "s_new",
                     "s_rejects"):
            try:
                con.unregister(name)
            except duckdb.Error:
                pass
    return {"fetch_rows": fetch_log.height, "pages": pages.height, "links": links.height}
