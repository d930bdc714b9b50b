"""A stand-in for the user's own search engine: a results-log partition written by a real engine over the crawl.

``python -m crawlcycle.evaluation.stand_in_engine OUT`` indexes the title and main text of every page the crawl has
indexed with tantivy (a Lucene-like engine: BM25 per field, English stemming, no stop words, the title boosted 3
times; the panel's ``tantivy`` judge reads the visible text instead), ranks the queries of the crawl's latest
query-log partition and writes their top K as ``OUT/dt=<that day>/engine.tsv`` (query, rank, url), the layout of
setting ``results_log_dir`` (:mod:`crawlcycle.ranking.results_log`). It shows ``crawlcycle fit-ranker`` at work on a
crawl without an engine of its own, such as the demo's. Settings come from ``CRAWLCYCLE_CONFIG`` and the
environment, as for every command.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from crawlcycle.db import connect, scalar
from crawlcycle.evaluation.judge import Judge, judge_top_k
from crawlcycle.settings.sources import load_settings

ENGINE = Judge("engine", "tantivy", "main", stemmer="english", stopwords=False, title_boost=3.0)


def write_results(out: Path) -> Path:
    """Write the engine's top K of the latest query-log partition's queries under ``out``; return the file."""
    settings = load_settings()
    with connect(settings, read_only=True) as con:
        pages = con.sql("SELECT p.url, p.title, p.text FROM pages p SEMI JOIN posting_docs d ON d.url = p.url "
                        "ORDER BY p.url").pl()
        day = scalar(con, "SELECT max(partition) FROM query_log")
        if day is None:
            raise SystemExit(f"stand_in_engine: {settings.db_path} has no query log yet: run a cycle first")
        workload = con.sql("SELECT query, sum(frequency) AS frequency FROM query_log WHERE partition = $day "
                           "GROUP BY query ORDER BY query", params={"day": day}).pl()
    shown = judge_top_k(ENGINE, pages, workload, settings.top_k)
    folder = out / f"dt={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    shown.write_csv(folder / "engine.tsv", separator="\t", include_header=False)
    print(f"stand_in_engine: {shown.height:,} results of {shown['query'].n_unique():,} queries over {pages.height:,} "
          f"pages in {folder / 'engine.tsv'}")
    return folder / "engine.tsv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the results-log folder to write a partition into")
    write_results(ap.parse_args().out)


if __name__ == "__main__":
    main()
