"""Per-cycle summary for people: ``crawlcycle report``."""

from __future__ import annotations

import json

import polars as pl

from crawlcycle.db import connect
from crawlcycle.settings import Settings

COLUMNS = ["cycle", "interval_start", "policy", "status", "batch_size", "fetched", "errors", "new_urls",
           "pages_total", "frontier_open", "next_batch", "seconds", "gate_failures"]
# Whether the query-driven part of the cycle's policy engaged (v_cycle_summary; README, "cycles").
ENGAGEMENT = ["needy_queries", "needy_with_candidates", "sketch_frontier_pages", "batch_query_share",
              "batch_query_mass"]


def engagement_text(row: dict) -> str:
    """A cycle's engagement figures in words; "–" where its policy gives none."""
    def count(value: int | None) -> str:
        return "–" if value is None else str(value)

    def share(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f} %"

    return (f"needy queries {count(row['needy_queries'])}, with frontier candidates "
            f"{count(row['needy_with_candidates'])}, frontier pages in sketches {count(row['sketch_frontier_pages'])}, "
            f"next batch: URLs with query impact {share(row['batch_query_share'])}, priority mass from queries "
            f"{share(row['batch_query_mass'])}")


def gate_cost(stage_seconds: dict[str, float], cycle_seconds: float | None) -> str:
    """The gates' validation seconds, their GX import seconds apart, and their share of the cycle's wall time."""
    imports = sum(v for k, v in stage_seconds.items() if k.startswith("gate_") and k.endswith("_import"))
    checks = sum(v for k, v in stage_seconds.items() if k.startswith("gate_") and not k.endswith("_import"))
    share = f", {100 * (checks + imports) / cycle_seconds:.0f} % of the cycle's {cycle_seconds:.0f} s" \
        if cycle_seconds else ""
    return f"validation {checks:.1f} s + GX import {imports:.1f} s{share}"


def cycle_summary(settings: Settings) -> pl.DataFrame:
    with connect(settings, read_only=True) as con:
        summary = con.sql("SELECT * FROM v_cycle_summary").pl()
        stages = con.sql("SELECT cycle, stage_seconds FROM cycles ORDER BY cycle").pl()
    parsed = [json.loads(s or "{}") for s in stages["stage_seconds"]]
    timing = [", ".join(f"{k} {v:.1f}s" for k, v in p.items() if not k.startswith("gate_")) for p in parsed]
    gates = [gate_cost(p, seconds) for p, seconds in zip(parsed, summary["seconds"], strict=True)]
    return summary.select(COLUMNS + ENGAGEMENT).with_columns(stage_seconds=pl.Series(timing, dtype=pl.String),
                                                             gates=pl.Series(gates, dtype=pl.String))


def steering(settings: Settings, rows: int = 10) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The latest cycle's most needy queries, and the head of the next batch with why each URL is in it."""
    with connect(settings, read_only=True) as con:
        needy = con.sql("SELECT rank, query, frequency, round(improvability, 3) AS improvability, "
                        "round(neediness, 3) AS neediness FROM v_needy_queries LIMIT ?", params=[rows]).pl()
        batch = con.sql("SELECT rank, url, round(priority, 4) AS priority, query_impact, "
                        "round(prestige_part, 4) AS prestige_part, needy_queries[1:3] AS needy_queries "
                        "FROM v_batch_explain WHERE cycle = (SELECT max(cycle) FROM batches) LIMIT ?",
                        params=[rows]).pl()
    return needy, batch


def print_report(settings: Settings) -> None:
    df = cycle_summary(settings)
    if df.is_empty():
        print("no cycles yet: run `crawlcycle cycle` or trigger crawl_cycle in Airflow")
        return
    needy, batch = steering(settings)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True, fmt_str_lengths=80):
        print(df.drop("stage_seconds", "gates", *ENGAGEMENT))
        for row in df.iter_rows(named=True):
            print(f"cycle {row['cycle']} stage times: {row['stage_seconds']}")
            print(f"cycle {row['cycle']} quality gates: {row['gates']}")
            print(f"cycle {row['cycle']} query engagement ({row['policy']}): {engagement_text(row)}")
        print(f"needy queries of cycle {df['cycle'][-1]} (v_needy_queries):")
        print(needy)
        print("head of the next batch and why (v_batch_explain):")
        print(batch)
