"""Query-based impact of frontier pages: their expected impact on the cycle's needy queries.

For each needy query: the frontier pages eligible for the next batch that match it (``match_mode``: its evidence
candidates, ``evidence_index``, or the pages holding rho = ``match_share`` of its n-grams, ``ngram_index.match``)
get their S' and the odds that, once fetched, they enter the query's top K (``score_model``: table
``top_k_odds``). A frontier page's query-based impact is the sum over the needy queries it matches of the query's
frequency times those odds (temp table ``s_impact``, read by ``sql/ordering/policies/hybrid.sql``). Until the odds model
has been fitted, and with ``impact_odds = 'sketch'``, the odds are Pandey & Olston's 0/1 membership of the query's
sketch: the top K of its crawled results by S and its matched frontier pages by S' (table ``sketches``, written
either way).
"""

from __future__ import annotations

import duckdb
import polars as pl

from crawlcycle.db import query, run_sql, staged
from crawlcycle.models import mix, prestige, score_model
from crawlcycle.ranking import evidence_index
from crawlcycle.settings import Settings

DISCOVERY_SHRINK = 5  # fetched pages' worth of the host's (or overall) mean in a path group's discovery estimate


def write_sketches(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> int:
    """Replace cycle ``cycle``'s sketches and top-K odds (needs temp table ``eligible``); return the frontier pages
    in the sketches."""
    needy = con.sql("SELECT query FROM needy_queries WHERE cycle = ?", params=[cycle]).pl()["query"].to_list()
    queries = score_model.stage_queries(needy)
    run_sql(con, "ordering/frontier_scope")
    # select_needy matched these queries over the same scope already: its stored candidates save a second pass
    stored = evidence_index.stored_candidates(con, cycle, queries) if settings.match_mode == "evidence" else None
    matched = score_model.pair_features(con, settings, cycle, queries, settings.match_share, found=stored)
    matched = matched.with_columns(score_model.predict(con, cycle, matched).alias("score"))
    crawled = query(con, "ordering/hybrid/needy_results", cycle=cycle).join(queries.select("qid", "query"), on="query")
    sketches, raised = score_model.top_k(crawled, matched, settings.top_k)
    # the bar a page must clear: the K-th of the crawled results, or (odds_bar = frontier) of the sketch, crawled and
    # frontier pages together, as the odds model learnt it
    bars = raised if settings.odds_bar == "frontier" else score_model.top_k(crawled, None, settings.top_k)[1]
    matched = score_model.with_bars(matched, bars)
    odds = score_model.predict_odds(con, cycle, matched) if settings.impact_odds == "model" else None
    frontier = matched.with_columns((odds if odds is not None else pl.lit(None, pl.Float64)).alias("p_top_k"))
    names = queries.select("qid", "query")
    with staged(con, s_sketches=sketches.join(names, on="qid").drop("qid"),
                s_odds=frontier.join(names, on="qid").select("query", "url", "bar", "p_top_k", s_prime="score")):
        run_sql(con, "ordering/hybrid/write_sketches", cycle=cycle)
    return con.execute("SELECT count(DISTINCT url) FROM sketches WHERE cycle = ? AND NOT crawled",
                       [cycle]).fetchall()[0][0]


def stage_hybrid(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> dict[str, object]:
    """Write the sketches and odds, stage ``s_impact`` and ``s_discovery`` for ``sql/ordering/policies/hybrid.sql``;
    return that SQL's parameters."""
    write_sketches(con, settings, cycle)
    run_sql(con, "ordering/hybrid/query_impact", cycle=cycle)
    run_sql(con, "ordering/hybrid/discovery_value", cycle=cycle, shrink=DISCOVERY_SHRINK)
    mixed = mix.weights(con, settings, cycle)
    return {"query_weight": mixed["query"], "prestige_weight": mixed["prestige"],
            "discovery_weight": mixed["discovery"], "normalization": settings.hybrid_normalization,
            **prestige.coefficients(con, cycle)}
