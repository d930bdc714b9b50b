"""Query-based impact of frontier pages, from the sketches of the cycle's needy queries.

For each needy query: the frontier pages eligible for the next batch that match it (``match_mode``: its evidence
candidates, ``evidence_index``, or the pages holding rho = ``match_share`` of its n-grams, ``ngram_index.match``)
get their S' (``score_model``, plus ``sketch_optimism`` validation RMSEs); with the query's crawled top K
(S, from ``query_results``) they form the candidates, and the best K by score are the query's sketch (table
``sketches``). A frontier page's query-based impact is the summed frequency of the needy queries whose sketch
holds it (temp table ``s_impact``, read by ``sql/policies/hybrid.sql``).
"""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql
from crawlcycle.models import prestige, score_model
from crawlcycle.ranking import evidence_index
from crawlcycle.settings import Settings


def write_sketches(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace cycle ``cycle``'s sketches (needs temp table ``eligible``); return the frontier pages in them."""
    needy = con.sql("SELECT query FROM needy_queries WHERE cycle = ?", params=[cycle]).pl()["query"].to_list()
    queries = score_model.stage_queries(needy)
    run_sql(con, "impact/frontier_scope")
    # select_needy matched these queries over the same scope already: its stored candidates save a second pass
    stored = evidence_index.stored_candidates(con, cycle, queries) if settings.match_mode == "evidence" else None
    matched = score_model.pair_features(con, settings, cycle, queries, settings.match_share, found=stored)
    # S' regresses towards the mean: ``sketch_optimism`` RMSEs more let a page that may well beat the query's
    # crawled results compete as such
    margin = settings.sketch_optimism * score_model.error(con, cycle)
    frontier = (matched.with_columns(score=score_model.predict(con, cycle, matched) + margin)
                .join(queries.select("qid", "query"), on="qid")
                .select("query", "url", "score", crawled=pl.lit(False)))
    crawled = query(con, "ordering/needy_results", cycle=cycle)
    con.register("s_candidates", pl.concat([crawled, frontier], how="vertical_relaxed"))
    try:
        run_sql(con, "impact/write_sketches", cycle=cycle, top_k=settings.top_k)
    finally:
        con.unregister("s_candidates")
    return con.execute("SELECT count(DISTINCT url) FROM sketches WHERE cycle = ? AND NOT crawled",
                       [cycle]).fetchall()[0][0]


def stage_hybrid(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    """Write the sketches and stage ``s_impact`` for ``sql/policies/hybrid.sql``; return that SQL's parameters."""
    write_sketches(con, settings, cycle)
    run_sql(con, "impact/query_impact", cycle=cycle)
    return {"query_weight": settings.hybrid_query_weight, "prestige_weight": settings.hybrid_prestige_weight,
            "normalization": settings.hybrid_normalization, **prestige.coefficients(con, cycle)}
