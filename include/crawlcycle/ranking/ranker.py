"""The reference ranker S(p, q): BM25F over crawled pages plus a PageRank prestige prior.

Index (tables of ``sql/migrations/003_postings.sql``): per indexed page the term frequencies of four fields,
``title``, ``text`` (main text), ``anchor`` (every anchor text of links pointing at the page) and ``url``
(host and path, percent-decoded), with field lengths, document frequencies and average field lengths.
Terms come from :func:`terms`, the one tokenizer of page and query text: ``normalize_query`` (NFKC, lower
case), then maximal runs of Unicode letters and digits (underscores and punctuation split), minus
``STOPWORDS``. The ranker's own :class:`Analyzer` (settings ``ranker_stopwords``, ``ranker_stemmer``,
``ranker_field_words``) can drop no stop word, stem with a Snowball stemmer and cap each field's terms, to look
like another engine; the index remembers the analyzer it was built with (``posting_analyzer``) and is rebuilt
whole when it changes.

Score (``sql/ranking/ranker/weights.sql``): BM25F with one k1 and per-field weights and b (settings ``bm25_k1``,
``bm25_weights``, ``bm25_b``), plus ``prestige_weight * ln(1 + pagerank * known URLs)``: a page of average
PageRank gets ``prestige_weight * ln 2``, and a page without PageRank yet gets nothing. Only pages holding
at least one query term are ranked; a query's repeated terms count once. Ranking reads, per query term,
the ``bm25_depth`` pages that term favours most and scores those exactly over all the query's terms, so
the cost grows with queries x depth, not with queries x pages.

Results come from this ranker (source ``reference``) unless a cycle holds results loaded from another
engine with :func:`load_results` (source ``loaded``): :func:`rank_queries` leaves such a cycle alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import duckdb
import polars as pl
import Stemmer

from crawlcycle.db import query, run_sql, scalar, staged, transaction
from crawlcycle.ranking import epochs
from crawlcycle.ranking.query_log import normalize_query
from crawlcycle.ranking.results_log import read_results
from crawlcycle.settings import RANK_FIELDS, Settings

# The stop set of Lucene's EnglishAnalyzer: function words that almost every English page holds.
STOPWORDS = ("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
             "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this",
             "to", "was", "will", "with")
_TERM = r"[^\W_]+"
CHUNK_PAGES = 5000  # pages tokenized at once: bounds memory when a large crawl is indexed in one run


@dataclass(frozen=True)
class Analyzer:
    """How the reference ranker turns text into terms beyond :func:`terms`' tokens: the stop words it drops, the
    Snowball stemmer it applies (None: none) and the terms of each field it indexes (None: all)."""

    stopwords: tuple[str, ...] = STOPWORDS
    stemmer: str | None = None
    field_words: int | None = None

    @staticmethod
    def of(settings: Settings) -> Analyzer:
        return Analyzer(STOPWORDS if settings.ranker_stopwords == "english" else (),
                        None if settings.ranker_stemmer == "none" else settings.ranker_stemmer,
                        settings.ranker_field_words or None)

    def key(self) -> str:
        """What the index's terms depend on: an index built with another key is rebuilt."""
        return f"stop={len(self.stopwords)};stem={self.stemmer or 'none'};words={self.field_words or 0}"


DEFAULT_ANALYZER = Analyzer()


def terms(text: pl.Expr, analyzer: Analyzer = DEFAULT_ANALYZER) -> pl.Expr:
    """The terms of each text, in order, repeats kept: those of ``normalize_query``'s text minus the analyzer's stop
    words, stemmed by its stemmer, computed on the column (a Python call per text would bound every index build)."""
    tokens = text.map_batches(_nfkc_lower, return_dtype=pl.String).str.extract_all(_TERM)
    if analyzer.stopwords:
        tokens = tokens.list.filter(~pl.element().is_in(analyzer.stopwords))
    if analyzer.stemmer:
        tokens = tokens.map_batches(lambda lists: _stemmed(lists, analyzer.stemmer),
                                    return_dtype=pl.List(pl.String))
    return tokens


@cache
def _stemmer(language: str) -> Stemmer.Stemmer:
    return Stemmer.Stemmer(language)


def _stemmed(lists: pl.Series, language: str) -> pl.Series:
    """Each list of terms with every term stemmed: each distinct term once through the Snowball stemmer."""
    vocabulary = lists.explode().drop_nulls().unique()
    if vocabulary.is_empty():
        return lists
    stems = pl.Series(_stemmer(language).stemWords(vocabulary.to_list()), dtype=pl.String)
    return lists.list.eval(pl.element().replace_strict(vocabulary, stems))


def _nfkc_lower(texts: pl.Series) -> pl.Series:
    # NFKC leaves ASCII as it is: only texts with other characters are normalised
    wide = texts.str.contains(r"[^\x00-\x7F]")
    return _where(texts, wide, lambda some: some.str.normalize("NFKC")).str.to_lowercase()


def url_text(url: pl.Expr) -> pl.Expr:
    """Host and path of each URL, percent-decoded: the text whose terms are the URL tokens."""
    return url.str.replace(r"^.*?://", "").map_batches(
        lambda urls: _where(urls, urls.str.contains("%", literal=True),
                            lambda some: pl.Series([unquote(u) for u in some], dtype=pl.String)),
        return_dtype=pl.String)


def _where(values: pl.Series, mask: pl.Series, change: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """``values`` with ``change`` applied to those where ``mask`` holds (the rest, often nearly all, untouched)."""
    mask = mask.fill_null(False)
    return values.scatter(mask.arg_true(), change(values.filter(mask))) if mask.any() else values


def _postings(fields: pl.DataFrame, analyzer: Analyzer) -> pl.DataFrame:
    """(url, field, term, tf) of frame (url, field, content, n): content counted n times, each content's first
    ``analyzer.field_words`` terms only when that is set."""
    # the content goes before the explode, which repeats every other column once per term: a page of a megabyte
    # of text repeated for each of its words took tens of GB
    found = terms(pl.col("content"), analyzer)
    if analyzer.field_words:
        found = found.list.head(analyzer.field_words)
    return (fields.select("url", "field", "n", term=found).explode("term").drop_nulls("term")
            .group_by("url", "field", "term").agg(tf=pl.col("n").sum().cast(pl.Int32)))


def index_pages(con: duckdb.DuckDBPyConnection, cycle: int, analyzer: Analyzer = DEFAULT_ANALYZER) -> dict[str, int]:
    """Bring the index up to date after cycle ``cycle``: index the pages not indexed yet, drop pages that are no
    longer indexable, and rewrite the anchor field of pages with new in-links; an index built with another
    ``analyzer`` is emptied first, so that every page is indexed anew; an index without an open epoch, or rebuilt,
    opens one (:mod:`crawlcycle.ranking.epochs`; :func:`rank_queries` decides the others). Running it again for the
    same cycle leaves the same tables. Returns how many pages got their content fields and anchor field written."""
    with transaction(con):
        rebuilt = scalar(con, "SELECT count(*) FROM posting_analyzer WHERE analyzer <> ?", [analyzer.key()]) > 0
        run_sql(con, "ranking/ranker/analyzer", analyzer=analyzer.key())
        run_sql(con, "ranking/ranker/sync_docs", cycle=cycle)
        counts = con.sql("SELECT count(*) FILTER (content) AS pages, count(*) AS anchor_pages FROM r_refresh").pl()
        # Every chunk's input is read from links and pages in one pass, and every chunk's output is written to the
        # index in one pass: a pass per chunk would scan those tables once per chunk, which grows with the square
        # of the crawl.
        run_sql(con, "ranking/ranker/refresh_inputs")
        for first in range(1, counts["anchor_pages"][0] + 1, CHUNK_PAGES):
            _index_chunk(con, first, first + CHUNK_PAGES - 1, analyzer)
        run_sql(con, "ranking/ranker/write_postings", cycle=cycle)
        run_sql(con, "ranking/ranker/index_stats", cycle=cycle)
        if rebuilt or epochs.open_epoch(con) is None:  # scores read an epoch's statistics: an index gets one at once
            epochs.begin(con, cycle, "settings" if rebuilt else "first", None, None)
    return counts.row(0, named=True)


def _index_chunk(con: duckdb.DuckDBPyConnection, first: int, last: int, analyzer: Analyzer) -> None:
    """Tokenize the fields of pages ``first``..``last`` of r_refresh into s_rewrite and s_postings."""
    pages = query(con, "ranking/ranker/content", first=first, last=last)
    anchors = query(con, "ranking/ranker/anchors", first=first, last=last)
    fields = pl.concat([
        pages.select("url", field=pl.lit(name), content=column, n=pl.lit(1, dtype=pl.Int64))
        for name, column in (("title", pl.col("title")), ("text", pl.col("text")), ("url", url_text(pl.col("url"))))
    ] + [anchors.select("url", field=pl.lit("anchor"), content="anchor", n="links")])
    with staged(con, s_chunk_rewrite=fields.select("url", "field").unique(),
                s_chunk_postings=_postings(fields, analyzer)):
        con.execute("INSERT INTO s_rewrite SELECT url, field FROM s_chunk_rewrite")
        con.execute("INSERT INTO s_postings SELECT url, field, term, tf FROM s_chunk_postings")


@contextmanager
def _weights(con: duckdb.DuckDBPyConnection, settings: Settings, queries: list[str], *, today: bool = False,
             written: int | None = None) -> Iterator[None]:
    """Stage the queries (s_queries), their terms (s_query_terms) and the terms' BM25F weights in the pages holding
    them (r_weights), with integer ids for queries and terms: under the index epoch's statistics, or with ``today``
    those of the index now; in every indexed page, or only in those index run ``written`` wrote."""
    query_frame = pl.DataFrame({"query": sorted(set(queries))}, schema={"query": pl.String}).with_row_index("qid")
    query_terms = (query_frame.select("qid", term=terms(pl.col("query"), Analyzer.of(settings))).explode("term")
                   .drop_nulls("term").unique()
                   .with_columns(tid=pl.col("term").rank("dense").cast(pl.UInt32)))
    weights, bs = settings.field_values("bm25_weights"), settings.field_values("bm25_b")
    try:
        with staged(con, s_queries=query_frame, s_query_terms=query_terms):
            run_sql(con, "ranking/ranker/weights", fields=list(RANK_FIELDS), weights=[weights[f] for f in RANK_FIELDS],
                    bs=[bs[f] for f in RANK_FIELDS], k1=settings.bm25_k1, prestige_weight=settings.prestige_weight,
                    today=today, changed=written is not None, cycle=written or 0)
            yield
    except BaseException:
        # a failed statement aborts the open transaction, which then refuses the DROP: the first error is the one to
        # report (out of memory, a full disk), and the temp table goes with the rollback or the connection
        with suppress(duckdb.Error):
            con.execute("DROP TABLE IF EXISTS r_weights")
        raise
    con.execute("DROP TABLE IF EXISTS r_weights")


def holds_loaded_results(con: duckdb.DuckDBPyConnection, cycle: int) -> bool:
    """Whether cycle ``cycle``'s results were loaded whole from another engine (:func:`load_results`)."""
    return bool(scalar(con, "SELECT count(*) FROM query_results WHERE cycle = ? AND source = 'loaded'", [cycle]))


@dataclass(frozen=True)
class Ranking:
    """What :func:`rank_queries` did: result rows written, the index epoch its scores read, why that epoch opened
    this cycle (None: it went on), its drift this cycle, and how many queries were ranked over the whole index,
    merged with the pages this cycle's index run wrote, or carried as they were (none of their results written, and
    the bound kept every written page out)."""

    rows: int
    epoch: int
    opened: str | None
    drift: float | None
    ranked: int
    merged: int
    carried: int

    def metrics(self) -> dict:
        return {"epoch": self.epoch, "opened": self.opened, "drift": self.drift, "queries_ranked": self.ranked,
                "queries_merged": self.merged, "queries_carried": self.carried}


def rank_queries(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int,
                 queries: list[str] | None = None) -> Ranking:
    """Replace cycle ``cycle``'s results with the top ``top_k`` pages of each query (source ``reference``), under the
    statistics of the index epoch (:mod:`crawlcycle.ranking.epochs`), opening a new one when the open one must close.
    Within an epoch, a query ranked last cycle keeps the results this cycle's index run did not write or remove,
    merged with the pages that run wrote (rescored), where that is exact (:func:`_unsettled`); every other query is
    ranked over the whole index. The queries are those of the cycle's query-log partition unless given. A cycle
    holding loaded results keeps them (0 rows written)."""
    if queries is None:
        queries = query(con, "ranking/ranker/cycle_queries", cycle=cycle)["query"].to_list()
    queries = sorted({normalize_query(q) for q in queries})
    key = epochs.ranker_key(settings, scalar(con, "SELECT analyzer FROM posting_analyzer"))
    epoch = epochs.open_epoch(con)
    reason, drift = epochs.reason_to_open(settings, epoch, cycle, key), None
    if reason is None:
        drift = _drift(con, settings, epochs.sample(queries, settings.epoch_sample))
        if cycle - epoch.opened_cycle >= settings.epoch_cycles:
            reason = "age"
        elif drift > settings.epoch_drift:
            reason = "drift"
    if reason is not None:
        epochs.begin(con, cycle, reason, key, drift)
    number = epochs.open_epoch(con).epoch
    if holds_loaded_results(con, cycle):
        return Ranking(0, number, reason, drift, 0, 0, 0)
    carried: list[str] = []
    if reason is None:
        run_sql(con, "ranking/ranker/previous_results", cycle=cycle)
        carried = sorted(set(queries) & set(con.sql("SELECT DISTINCT query FROM r_previous").pl()["query"]))
    results, merged, unsettled = [], 0, set()
    if carried:
        with _weights(con, settings, carried, written=cycle):
            run_sql(con, "ranking/ranker/merge_top_k", top_k=settings.top_k)
            merged = scalar(con, "SELECT count(*) FROM r_open")
            top = _cut(con, settings)
        con.execute("DROP TABLE r_open")
        unsettled = _unsettled(con.sql("SELECT query, url, score FROM r_previous WHERE rank = ?",
                                       params=[settings.top_k]).pl(), top, settings.top_k)
        results.append(top.filter(~pl.col("query").is_in(unsettled)))
    con.execute("DROP TABLE IF EXISTS r_previous")
    whole = sorted(set(queries) - set(carried) | unsettled)
    results.append(_ranked(con, settings, whole))
    rows = pl.concat(results).sort("query", "rank")
    with staged(con, s_results=rows), transaction(con):
        con.execute("DELETE FROM query_results WHERE cycle = ?", [cycle])
        con.execute("INSERT INTO query_results SELECT ?, query, rank, url, score, 'reference' FROM s_results",
                    [cycle])
    return Ranking(rows.height, number, reason, drift, len(whole), merged - len(unsettled), len(carried) - merged)


def _unsettled(old_kth: pl.DataFrame, merged: pl.DataFrame, k: int) -> set[str]:
    """Queries whose merged top K (query, rank, url, score) may miss a page: every page the merge did not see scores
    as it did last cycle, so at most as high as the old K-th result (``old_kth``: query, url, score; ties by URL);
    where the new K-th is not at least as good, or the merge has fewer than K, such a page may belong in the top K."""
    new = merged.filter(pl.col("rank") == k).select("query", new_url="url", new_score="score")
    judged = old_kth.join(new, on="query", how="left")
    worse = (pl.col("new_score").is_null() | (pl.col("new_score") < pl.col("score"))
             | ((pl.col("new_score") == pl.col("score")) & (pl.col("new_url") > pl.col("url"))))
    return set(judged.filter(worse)["query"])


def _ranked(con: duckdb.DuckDBPyConnection, settings: Settings, queries: list[str], today: bool = False
            ) -> pl.DataFrame:
    """(query, rank, url, score): the top K of each query over the whole index."""
    with _weights(con, settings, queries, today=today):
        run_sql(con, "ranking/ranker/top_k", depth=settings.bm25_depth)
        return _cut(con, settings)


def _cut(con: duckdb.DuckDBPyConnection, settings: Settings) -> pl.DataFrame:
    top = query(con, "ranking/ranker/top_cut", top_k=settings.top_k)
    con.execute("DROP TABLE r_scored")
    return top


def _drift(con: duckdb.DuckDBPyConnection, settings: Settings, queries: list[str]) -> float:
    """Share of the top-K places of ``queries`` that ranking under today's statistics, instead of the epoch's, fills
    with another page (0 without results)."""
    held, today = (_ranked(con, settings, queries, today=t).select("query", "url") for t in (False, True))
    places = held.group_by("query").len().join(today.group_by("query").len(), on="query", how="full",
                                                 coalesce=True).select(pl.max_horizontal("len", "len_right")).sum()
    if not places.item():
        return 0.0
    return round(1 - held.join(today, on=["query", "url"]).height / places.item(), 6)


def pair_scores(con: duckdb.DuckDBPyConnection, settings: Settings, queries: list[str],
                pairs: pl.DataFrame) -> pl.DataFrame:
    """S of given (query, page) pairs: ``pairs`` (qid, url) with qid indexing ``queries``, which must be
    normalised and distinct. Returns (qid, url, score) for the pairs whose page is indexed."""
    if sorted(set(queries)) != queries:
        raise ValueError("pair_scores needs distinct queries in sorted order (qid = position)")
    with staged(con, s_pairs=pairs.select(pl.col("qid").cast(pl.UInt32), "url")), _weights(con, settings, queries):
        return query(con, "ranking/ranker/pair_scores").sort("qid", "url")


def copy_scores(con: duckdb.DuckDBPyConnection, settings: Settings, copies: pl.DataFrame,
                pairs: pl.DataFrame) -> pl.DataFrame:
    """S of other copies of indexed pages, each in place of its page's indexed copy in today's index (a replaced
    copy, to see where it would rank now): ``copies`` (url, title, text), ``pairs`` (query, url) with normalised
    queries. The anchor and url fields, PageRank and the index statistics stay the index's
    (``sql/ranking/ranker/copy_scores.sql``). Returns (query, url, score) for the pairs whose copy holds a term of
    the query."""
    fields = pl.concat([copies.select("url", field=pl.lit(name), content=pl.col(name), n=pl.lit(1, dtype=pl.Int64))
                        for name in ("title", "text")])
    analyzer = Analyzer.of(settings)
    pair_terms = (pairs.select("query", "url", term=terms(pl.col("query"), analyzer)).explode("term")
                  .drop_nulls("term").unique())
    weights, bs = settings.field_values("bm25_weights"), settings.field_values("bm25_b")
    with staged(con, s_copy_postings=_postings(fields, analyzer), s_pair_terms=pair_terms):
        return query(con, "ranking/ranker/copy_scores", fields=list(RANK_FIELDS),
                     weights=[weights[f] for f in RANK_FIELDS], bs=[bs[f] for f in RANK_FIELDS], k1=settings.bm25_k1,
                     prestige_weight=settings.prestige_weight)


def inherited_scores(con: duckdb.DuckDBPyConnection, settings: Settings, queries: list[str],
                     candidates: pl.DataFrame) -> pl.DataFrame:
    """Inherited relevance of ``candidates`` (qid, seq), qid indexing ``queries`` (normalised, distinct, sorted):
    (qid, seq, inherited_max, inherited_mean, crawled_linkers), S of the crawled pages linking to each page."""
    if sorted(set(queries)) != queries:
        raise ValueError("inherited_scores needs distinct queries in sorted order (qid = position)")
    with (staged(con, s_candidates=candidates.select(pl.col("qid").cast(pl.UInt32), "seq")),
          _weights(con, settings, queries)):
        return query(con, "ranking/ranker/inherited")


def score_pages(con: duckdb.DuckDBPyConnection, settings: Settings, text: str) -> dict[str, float]:
    """Score of every indexed page holding a term of query ``text``, best first."""
    with _weights(con, settings, [normalize_query(text)]):
        scores = query(con, "ranking/ranker/page_scores")
    return dict(zip(scores["url"], scores["score"], strict=True))


def load_results(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int, path: str | Path) -> int:
    """Replace cycle ``cycle``'s results with another engine's top K from one results file (a file of a results-log
    partition, :func:`crawlcycle.ranking.results_log.read_results`); return the rows written."""
    df = read_results(Path(path), settings)
    with staged(con, s_results=df), transaction(con):
        con.execute("DELETE FROM query_results WHERE cycle = ?", [cycle])
        con.execute("INSERT INTO query_results SELECT ?, query, rank, url, score, 'loaded' FROM s_results",
                    [cycle])
    return df.height
