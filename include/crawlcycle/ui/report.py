"""Per-cycle summary for people: ``crawlcycle report``, and the settings that changed between cycles:
``crawlcycle report --settings``."""

from __future__ import annotations

import json

import polars as pl

from crawlcycle.airflow import task_overhead
from crawlcycle.db import connect, query
from crawlcycle.settings import Settings
from crawlcycle.ui.crawl_views import setting_rows

COLUMNS = ["cycle", "interval_start", "query_log", "policy", "status", "batch_size", "fetched", "errors", "new_urls",
           "pages_total", "frontier_open", "next_batch", "seconds", "gate_failures"]
# Whether the query-driven part of the cycle's policy engaged (v_cycle_summary; docs/reference/tables.md).
ENGAGEMENT = ["needy_queries", "needy_with_candidates", "sketch_frontier_pages", "batch_query_share",
              "batch_query_mass"]
HEAD_ROWS = 10  # rows of the needy queries, the next batch and the held origins shown
# What the batch's slots gave (v_cycle_summary; docs/explanation/fetching.md, "Waste").
WASTE = ["slots_fetched", "slots_failed", "slots_skipped", "slots_unanswered", "waste_share", "probes",
         "untested_slots"]

# How fresh the index is kept (v_cycle_summary; docs/explanation/refresh.md).
FRESHNESS = ["refreshes", "checks_not_modified", "checks_changed", "checks_gone", "est_freshness",
             "next_refresh_share"]


def percent(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.1f} %"


def freshness_text(row: dict) -> str:
    """A cycle's refreshes in words: what their checks found, the estimated freshness of the index it leaves and the
    refresh share of the batch it chose."""
    if row["refreshes"] is None:
        return "–"
    return (f"{row['refreshes']} refreshes in the batch: {row['checks_not_modified']} not modified (304), "
            f"{row['checks_changed']} changed, {row['checks_gone']} left the index; estimated freshness "
            f"{percent(row['est_freshness'])}; the batch it chose: {percent(row['next_refresh_share'])} refreshes")


def waste_text(row: dict) -> str:
    """A cycle's batch slots in words: pages, tries without a page and slots not tried, by class."""
    if row["slots_fetched"] is None:
        return "–"
    failed, skipped = (json.loads(row[k]) if isinstance(row[k], str) else row[k] or {}
                       for k in ("slots_failed", "slots_skipped"))

    def counted(counts: dict[str, int], what: str) -> str:
        by_class = f" ({', '.join(f'{k} {n}' for k, n in counts.items())})" if counts else ""
        return f"{sum(counts.values())} {what}{by_class}"

    waste = "–" if row["waste_share"] is None else f"{100 * row['waste_share']:.1f} %"  # an empty batch has none
    return (f"{row['batch_size']} slots: {row['slots_fetched']} pages, {counted(failed, 'without a page')}, "
            f"{counted(skipped, 'not tried')}; {row['slots_unanswered']} to origins that did not answer; "
            f"waste {waste}; {row['probes']} origins probed outside the batch; the batch it chose: at most "
            f"{row['untested_slots']} slots for origins that gave no page yet")


def engagement_text(row: dict) -> str:
    """A cycle's engagement figures in words; "–" where its policy gives none."""
    def count(value: int | None) -> str:
        return "–" if value is None else str(value)

    return (f"needy queries {count(row['needy_queries'])}, with frontier candidates "
            f"{count(row['needy_with_candidates'])}, frontier pages in sketches {count(row['sketch_frontier_pages'])}, "
            f"next batch: URLs with query impact {percent(row['batch_query_share'])}, priority mass from queries "
            f"{percent(row['batch_query_mass'])}")


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
        stages = con.sql("SELECT cycle, run_id, stage_seconds, stage_memory_mib FROM cycles ORDER BY cycle").pl()
    parsed = [json.loads(s or "{}") for s in stages["stage_seconds"]]
    timing = [", ".join(f"{k} {v:.1f}s" for k, v in p.items() if not k.startswith("gate_")) for p in parsed]
    memory = [", ".join(f"{k} {v:.0f} MiB" for k, v in json.loads(m).items()) if m else "not measured here"
              for m in stages["stage_memory_mib"]]
    gates = [gate_cost(p, seconds) for p, seconds in zip(parsed, summary["seconds"], strict=True)]
    return summary.select(COLUMNS + WASTE + ENGAGEMENT + FRESHNESS).with_columns(
        stage_seconds=pl.Series(timing, dtype=pl.String), stage_memory=pl.Series(memory, dtype=pl.String),
        gates=pl.Series(gates, dtype=pl.String), run_id=stages["run_id"], stage_json=stages["stage_seconds"])


NOT_AIRFLOW = "no Airflow task instances (run outside Airflow, e.g. by `crawlcycle cycle`)"


def airflow_runs(df: pl.DataFrame, metadata: str | None = None) -> tuple[dict[int, task_overhead.CycleOverhead], str]:
    """Where each cycle's Airflow run spent its wall time, by cycle; and, when Airflow's metadata database cannot
    be read, one line saying why (else "")."""
    cycles = [(r["cycle"], r["run_id"], json.loads(r["stage_json"] or "{}")) for r in df.iter_rows(named=True)]
    try:
        return task_overhead.overheads(cycles, metadata), ""
    except task_overhead.MetadataUnavailable as e:
        return {}, f"Airflow task overhead: {e}; cycles run with `crawlcycle cycle` have no task instances"


def task_table(run: task_overhead.CycleOverhead) -> pl.DataFrame:
    tasks = pl.DataFrame([vars(t) for t in run.tasks]).with_columns(pl.col(pl.Float64).round(2))
    return tasks.rename({"startup": "start_up", "own": "stage"})


def steering(settings: Settings, rows: int = HEAD_ROWS) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The latest cycle's most needy queries, the head of the next batch with why each URL is in it, and every origin
    held out of the batches (the most waiting URLs first)."""
    with connect(settings, read_only=True) as con:
        needy = query(con, "ui/report/needy_queries", rows=rows)
        batch = query(con, "ui/report/batch", rows=rows)
        held = con.sql("SELECT * FROM v_origins_held").pl()
    return needy, batch, held


def table_config(wide: bool, rows: int = -1, str_lengths: int = 80, **options: bool) -> pl.Config:
    """Frames printed with ``rows`` rows (-1: all) and every column, strings cut at ``str_lengths`` with "…" in a
    table at most 200 characters wide; ``wide``: every string whole, each row on one line (for a pager or a file)."""
    return pl.Config(tbl_rows=rows, tbl_cols=-1, tbl_width_chars=-1 if wide else 200,
                     fmt_str_lengths=1_000_000 if wide else str_lengths, **options)


def _report_frames(wide: bool, str_lengths: int = 80) -> pl.Config:
    return table_config(wide, str_lengths=str_lengths, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True)


def print_report(settings: Settings, airflow_metadata: str | None = None, wide: bool = False) -> None:
    """The per-cycle summary; ``airflow_metadata`` is the SQLAlchemy URL of Airflow's metadata database
    (default: task_overhead.metadata_url()); ``wide``: texts (the batch's why) whole."""
    df = cycle_summary(settings)
    if df.is_empty():
        print("no cycles yet: run `crawlcycle cycle` or trigger crawl_cycle in Airflow")
        return
    needy, batch, held = steering(settings)
    runs, no_airflow = airflow_runs(df, airflow_metadata)
    with _report_frames(wide):
        print(df.drop("stage_seconds", "stage_memory", "gates", "run_id", "stage_json", *WASTE, *ENGAGEMENT,
                      *FRESHNESS))
        if no_airflow:
            print(no_airflow)
        for row in df.iter_rows(named=True):
            print(f"cycle {row['cycle']} stage times: {row['stage_seconds']}")
            print(f"cycle {row['cycle']} memory each stage took at its peak: {row['stage_memory']}")
            print(f"cycle {row['cycle']} quality gates: {row['gates']}")
            if not no_airflow:
                run = runs.get(row["cycle"])
                print(f"cycle {row['cycle']} Airflow overhead: " + (run.line() if run else NOT_AIRFLOW))
            print(f"cycle {row['cycle']} batch slots: {waste_text(row)}")
            print(f"cycle {row['cycle']} query engagement ({row['policy']}): {engagement_text(row)}")
            print(f"cycle {row['cycle']} freshness: {freshness_text(row)}")
        if runs:
            print(f"Airflow tasks of cycle {max(runs)}, seconds (start_up: process fork, DAG parse, imports, "
                  "opening DuckDB, reporting back):")
            print(task_table(runs[max(runs)]))
        print(f"needy queries of cycle {df['cycle'][-1]} (v_needy_queries):")
        print(needy)
        print("head of the next batch and why (v_batch_explain):")
        print(batch)
        if held.height:
            print(f"origins held out of the batches until a probe answers (v_origins_held; {held.height} in all, "
                  f"the {min(held.height, HEAD_ROWS)} with the most waiting URLs):")
            print(held.head(HEAD_ROWS))


def print_setting_changes(settings: Settings, wide: bool = False) -> None:
    """Every change of a setting from one cycle's record to the next: cycle, setting, old → new, and where the new value
    came from, as the Crawl page shows them."""
    with connect(settings, read_only=True) as con:
        rows = con.sql("SELECT * FROM v_cycle_settings").pl().to_dicts()
    changes = pl.DataFrame(setting_rows(rows)[1], schema={"cycle": pl.Int32, "setting": pl.String,
                                                          "change": pl.String, "source": pl.String})
    if changes.is_empty():
        print("no setting changed between cycles (v_cycle_settings lists each cycle's settings not at their defaults)")
        return
    with _report_frames(wide, 160):  # sources name files by their paths
        print("settings changed between cycles (each cycle runs with the settings its begin recorded):")
        print(changes)
