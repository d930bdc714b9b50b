"""The stages of one crawl cycle, as plain functions: each Airflow task of ``crawl_cycle`` calls one,
and ``crawlcycle cycle`` calls them all in order in one process.

Stages that open the DuckDB file: begin, gates, update, refit, select_needy, score, materialize, close.
Stages that run in parallel per host shard and never open it: fetch, parse. They exchange files in
``<data_dir>/cycles/<cycle>/shard-<k>/``, or under the ``shard_storage`` URL (see shard_storage).

A cycle runs with one set of settings: begin resolves them and records them with the cycle, and every later task
runs with that record (:func:`run_task`).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import date
from itertools import groupby
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import UrlRejected, canonicalize, host_of
from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.contracts.errors import InputError
from crawlcycle.db import connect, held_open, migrate, query, run_sql, scalar, staged, transaction
from crawlcycle.models import improvability, mix, prestige, refit, score_model
from crawlcycle.ordering import registry
from crawlcycle.ordering.needy_queries import select_needy as select_needy_queries
from crawlcycle.pipeline import materialize as materialize_mod
from crawlcycle.pipeline import shard_storage, stage_memory, update
from crawlcycle.pipeline.crawl_snapshot import export_snapshot
from crawlcycle.pipeline.resource_limits import reports_exhaustion
from crawlcycle.pipeline.stage_order import SHARD, STAGE_ORDER, Task
from crawlcycle.quality import gates
from crawlcycle.ranking import engine_results, evidence_index, ngram_index, ranker
from crawlcycle.ranking.query_log import ingest_partition, source_partition
from crawlcycle.settings import Settings, SettingsError
from crawlcycle.settings.sources import begun, from_record, load_settings, with_overrides


class CycleOrderError(InputError):
    """A cycle was started while an earlier one is unfinished (the message says which, in one line)."""


def run_settings(params: dict[str, Any] | None = None, record: dict[str, Any] | None = None) -> Settings:
    """The settings as they stand for a task of one Airflow run, with the run's non-empty parameters on top: the
    settings file and the environment before its cycle has begun; once it has (``record``: what its begin resolved,
    handed on by the DAG run), that record, with the environment's settings in LIVE, the file unread."""
    overrides = {k: v for k, v in (params or {}).items() if v not in (None, "")}
    return begun(record, overrides) if record else with_overrides(load_settings(), overrides)


def run_task(task: Task, live: Settings, inputs: dict[str, Any]) -> Any:
    """Run ``task`` of a cycle on ``inputs``, as the DAG and run_cycle do. ``live`` are the settings as they stand
    (file, environment, flags, the run's parameters): begin runs with them and records them with the cycle; every
    later task of the cycle, a retry too, runs with that record (a shard task with the copy plan_shards wrote into
    its folder), but for the settings in ``settings.LIVE`` (where the state is, what shapes the DAG), which it takes
    from ``live``. So an edit applies from the next cycle, and a replay of an interval, which runs its begin
    again, records afresh."""
    if task.name == "begin":
        return task.run(live, inputs)
    if task.kind == SHARD:
        return task.run(from_record(_shard_record(inputs["shard"]), live), inputs)
    with held_open(live):  # the task's own connections share the instance that read the record: one open, not two
        return task.run(from_record(_cycle_record(live, inputs["cycle"]), live), inputs)


def _cycle_record(settings: Settings, cycle: int) -> dict[str, Any]:
    with connect(settings, read_only=True) as con:
        record = scalar(con, "SELECT settings FROM cycles WHERE cycle = ?", [cycle])
    if record is None:
        raise InputError(f"cycle {cycle} has no recorded settings (its begin ran before cycles recorded them): "
                         "run the cycle again from its begin task")
    return json.loads(record)


def _shard_record(shard: str) -> dict[str, Any]:
    try:
        return json.loads(shard_storage.read_file(shard, shard_files.SETTINGS))
    except (FileNotFoundError, json.JSONDecodeError) as e:
        raise shard_files.damaged(f"{shard}/{shard_files.SETTINGS}", type(e).__name__) from None


def shard_of(host: str, shards: int) -> int:
    """Stable host -> shard assignment: every URL of a host lands in the same shard."""
    return zlib.crc32(host.encode()) % shards


@contextmanager
def timed(con: duckdb.DuckDBPyConnection, cycle: int, stage: str) -> Iterator[None]:
    """Record the stage's wall time in cycles.stage_seconds and the memory it took in cycles.stage_memory_mib."""
    t0, memory = time.perf_counter(), stage_memory.start()
    try:
        yield
    finally:  # a failed stage's time and memory count too
        record_seconds(con, cycle, {stage: round(time.perf_counter() - t0, 3)})
        if (mib := stage_memory.added_mib(memory)) is not None:
            con.execute("UPDATE cycles SET stage_memory_mib = json_merge_patch(coalesce(stage_memory_mib, '{}'), ?) "
                        "WHERE cycle = ?", [json.dumps({stage: mib}), cycle])


def record_seconds(con: duckdb.DuckDBPyConnection, cycle: int, seconds: dict[str, float]) -> None:
    con.execute("UPDATE cycles SET stage_seconds = json_merge_patch(coalesce(stage_seconds, '{}'), ?) "
                "WHERE cycle = ?", [json.dumps(seconds), cycle])


def init(settings: Settings) -> dict[str, int]:
    """Create or migrate the database and admit the seed URLs: ``migrations`` applied, ``seeds`` admitted
    (new to the frontier), ``rejected`` seed lines (kept in url_rejects). SettingsError, before the database
    is touched, when the seeds file holds no valid seed."""
    seeds = Path(settings.seeds_file)
    if not seeds.is_file():
        raise FileNotFoundError(f"setting seeds_file: {seeds} does not exist (run `crawlcycle demo-web` first?)")
    try:
        lines = seeds.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise SettingsError(f"setting seeds_file: {seeds} cannot be read ({why})") from None
    seeds_rows, rejects = seed_urls(settings, lines)
    if not rejects and not seeds_rows:
        raise SettingsError(f"setting seeds_file: {seeds} holds no seed URL (only blank lines and comments)")
    if not seeds_rows:
        first = rejects[0]
        raise SettingsError(f"setting seeds_file: {seeds} holds no valid seed URL: {len(rejects)} lines rejected; "
                            f"first, line {first['line']}: {first['url']!r} ({first['reason']})")
    with connect(settings) as con:
        applied = migrate(con)
        admitted, out_of_scope = admit_seeds(con, settings, seeds_rows, rejects, str(seeds))
        return {"migrations": len(applied), "seeds": admitted, "rejected": len(rejects) + out_of_scope}


def seed_urls(settings: Settings, lines: list[str]) -> tuple[list[dict], list[dict]]:
    """Seed lines as frontier rows (url, host, seq), and the lines canonicalize refuses (line, url as written,
    reason). Blank lines and ``#`` comments are neither."""
    rows, rejects, seen = [], [], set()
    for seq, line in enumerate(lines):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            url = canonicalize(line.strip(), rules=settings.url_rules)
        except UrlRejected as e:
            rejects.append({"line": seq + 1, "url": line.strip(), "reason": e.reason})
            continue
        if url not in seen:  # two spellings of one URL are one seed
            seen.add(url)
            rows.append({"url": url, "host": host_of(url), "seq": seq})
    return rows, rejects


def admit_seeds(con: duckdb.DuckDBPyConnection, settings: Settings, rows: list[dict], rejects: list[dict],
                source: str) -> tuple[int, int]:
    """Admit the seed rows the frontier does not know yet and the crawl scope admits, and record the rejected lines
    of ``source`` (replacing those of an earlier init); return (URLs admitted, seeds out of scope). SettingsError,
    before anything is written, when the scope refuses every seed."""
    before = scalar(con, "SELECT count(*) FROM frontier")
    scope = {**settings.scope_rules(), "follow_external": True}  # a seed's host is a seed host
    with staged(con, s_seeds=pl.DataFrame(rows, schema={"url": pl.String, "host": pl.String, "seq": pl.Int64}),
                s_seed_rejects=pl.DataFrame(rejects, schema={"line": pl.Int64, "url": pl.String, "reason": pl.String})):
        out_of_scope = scalar(con, "SELECT count(*) FROM s_seeds WHERE scope_reason(url, host, 0, $scope) IS NOT NULL",
                              {"scope": scope})
        if rows and out_of_scope == len(rows):
            first = scalar(con, "SELECT url || ' (' || scope_reason(url, host, 0, $scope) || ')' FROM s_seeds "
                                "ORDER BY seq LIMIT 1", {"scope": scope})
            raise SettingsError(f"setting seeds_file: {source} holds no seed URL inside the crawl scope "
                                f"(allowed_domains, denied_domains, url_include, url_exclude); first: {first}")
        run_sql(con, "pipeline/stages/admit_seeds", source=source, scope=scope)
    return scalar(con, "SELECT count(*) FROM frontier") - before, out_of_scope


@reports_exhaustion
def begin(settings: Settings, interval_start: date, interval_end: date | None = None, run_id: str = "manual") -> int:
    """Open the cycle of this data interval, recording the settings it runs with, and ingest its query-log partition
    (or, when it is missing, what the setting missing_query_log says); return the cycle number.

    The interval's cycle number is reused when the interval was run before (a replay), otherwise it is
    the next one.
    """
    settings.require_user_agent()  # the cycle fetches: refuse before it is opened
    source = source_partition(settings, interval_start)  # before anything is written: it may refuse to go on
    with connect(settings) as con:
        migrate(con)
        cycle = (scalar(con, "SELECT cycle FROM cycles WHERE interval_start = ?", [interval_start])
                 or scalar(con, "SELECT coalesce(max(cycle), 0) + 1 FROM cycles"))
        unfinished = con.execute("SELECT cycle, interval_start, run_id FROM cycles "
                                 "WHERE status <> cycle_done() AND cycle < ?", [cycle]).fetchall()
        if unfinished:
            # Each cycle fetches the batch the one before it chose: cycles run strictly in order.
            raise CycleOrderError(f"cycle {unfinished[0][0]} (interval {unfinished[0][1]}) has not finished; "
                                  f"{_finish_advice(unfinished[0][1], unfinished[0][2])}; cycle {cycle} runs after it")
        run_sql(con, "pipeline/stages/begin_cycle", cycle=cycle, interval_start=interval_start,
                interval_end=interval_end, run_id=run_id, policy=settings.policy,
                settings=json.dumps(settings.record()))
        try:
            with timed(con, cycle, "begin"):
                rows = ingest_partition(con, settings, interval_start, source or interval_start)
        except InputError as e:  # nothing of the partition was kept: the cycle shows why until it runs again
            con.execute("UPDATE cycles SET status = cycle_failed(), failure = ? WHERE cycle = ?", [str(e), cycle])
            raise
        con.execute("UPDATE cycles SET query_partition = ?, query_rows = ? WHERE cycle = ?", [source, rows, cycle])
    return cycle


def _finish_advice(interval_start: date, run_id: str) -> str:
    """How to finish an unfinished cycle, by what ran it: `crawlcycle cycle` (run id manual) or Airflow."""
    if run_id == "manual":
        return f"run it again with `crawlcycle cycle --date {interval_start}`"
    return (f"clear its Airflow run {run_id} (or its failed task) so that it runs again (a backfill runs in order "
            "with --max-active-runs 1)")


@reports_exhaustion
def plan_shards(settings: Settings, cycle: int) -> list[str]:
    """Write the shard inputs of batch ``cycle``; return the shard folders (one per host group)."""
    with connect(settings) as con, timed(con, cycle, "plan_shards"):
        if not scalar(con, "SELECT count(*) FROM batches WHERE fetch_cycle = ?", [cycle]):
            # First cycle, or the previous one never materialized: choose this batch now.
            with transaction(con):
                score_cycle, _ = batch_cycles(fetch=cycle)
                registry.score_frontier(con, settings, score_cycle)
                materialize_mod.materialize(con, settings, score_cycle)
        return write_shards(con, settings, cycle)


def write_shards(con: duckdb.DuckDBPyConnection, settings: Settings, cycle: int) -> list[str]:
    """Split batch ``cycle`` and the origins to probe in it by host into shard folders (URLs, each refresh with its
    stored copy's validators, probes, cached host state and the cycle's settings); return their locations."""
    batch = query(con, "pipeline/stages/shard_urls", cycle=cycle)
    probes = con.sql("SELECT origin, host FROM probes WHERE fetch_cycle = ? ORDER BY best_priority DESC, origin",
                     params=[cycle]).pl()
    # a replay of the cycle starts from the errors in a row the host had before the cycle's first run
    hosts = con.sql("SELECT * REPLACE (CASE WHEN updated_cycle >= ? THEN errors_before ELSE errors END AS errors) "
                    "FROM hosts", params=[cycle]).pl()
    # and with the robots.txt copies it had then: one fetched by that run is fetched again, its sitemaps read again
    robots = con.sql("SELECT * FROM robots WHERE updated_cycle < ?", params=[cycle]).pl()
    # The fetch journals of an earlier run of the cycle stay: they hold requests that reached the servers.
    journals = {}
    for location in shard_storage.stored_shards(settings, cycle):
        with shard_storage.local_shard(location, write=False) as d:
            if (d / shard_files.POLITENESS_JOURNAL).is_file():
                journals[location] = (d / shard_files.POLITENESS_JOURNAL).read_bytes()
    shard_storage.clear(shard_storage.cycle_location(settings, cycle))

    def by_shard(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(shard=pl.col("host").map_elements(lambda h: shard_of(h, settings.shards),
                                                                    return_dtype=pl.Int64))

    batch, probes = by_shard(batch), by_shard(probes)
    out = []
    for k in sorted(set(batch["shard"]) | set(probes["shard"])):
        location = shard_storage.shard_location(settings, cycle, k)
        with shard_storage.local_shard(location) as d:
            urls, origins = batch.filter(pl.col("shard") == k), probes.filter(pl.col("shard") == k)
            in_shard = pl.col("host").is_in(pl.concat([urls["host"], origins["host"]]).unique().implode())
            shard_files.write_table(d / shard_files.URLS, urls.drop("shard").to_arrow().cast(shard_files.URLS_SCHEMA))
            origins.drop("shard").write_parquet(d / shard_files.PROBES)
            hosts.filter(in_shard).write_parquet(d / shard_files.HOSTS_IN)
            robots.filter(in_shard).write_parquet(d / shard_files.ROBOTS_IN)
            (d / shard_files.SETTINGS).write_text(json.dumps(settings.record()))
            if location in journals:
                (d / shard_files.POLITENESS_JOURNAL).write_bytes(journals[location])
        out.append(location)
    return sorted(out)


def _timed_file(shard_dir: Path, stage: str, fn: Callable[[], Any]) -> None:
    t0 = time.perf_counter()
    fn()
    timing = shard_dir / shard_files.TIMING
    data = json.loads(timing.read_text()) if timing.exists() else {}
    data[stage] = round(time.perf_counter() - t0, 3)
    with shard_files.replacing(timing) as tmp:  # whole or not at all: a retry reads it
        tmp.write_text(json.dumps(data))


@reports_exhaustion
def fetch(settings: Settings, shard_dir: str) -> str:
    """Fetch one shard's URLs politely (a refresh conditionally, against its stored copy); writes WARC and Parquet
    logs into the shard folder."""
    from crawlcycle.fetch.fetcher import fetch_urls
    from crawlcycle.fetch.http_client import StoredCopy

    with shard_storage.local_shard(shard_dir) as d:
        batch = pl.read_parquet(d / shard_files.URLS)
        urls = batch["url"].to_list()
        copies = {r.pop("url"): StoredCopy(**r) for r in batch.filter(pl.col("kind") == "refresh").select(
            "url", "etag", "last_modified", "payload_digest", "fetched_at").iter_rows(named=True)}
        probes = pl.read_parquet(d / shard_files.PROBES)["origin"].to_list()
        hosts = pl.read_parquet(d / shard_files.HOSTS_IN).to_dicts()
        robots = pl.read_parquet(d / shard_files.ROBOTS_IN).to_dicts()
        # The politeness journal is stored as it grows, so that a retry elsewhere finds it.
        synced = shard_storage.storing(shard_dir, d / shard_files.POLITENESS_JOURNAL)
        _timed_file(d, "fetch", lambda: fetch_urls(urls, settings, d, hosts=hosts, robots=robots,
                                                   journal_synced=synced, probes=probes, copies=copies))
    return shard_dir


@reports_exhaustion
def parse(settings: Settings, shard_dir: str) -> str:
    """Extract text, metadata and links of one shard's responses into Parquet."""
    from crawlcycle.parse.warc_records import parse_warcs

    with shard_storage.local_shard(shard_dir) as d:
        _timed_file(d, "parse", lambda: parse_warcs([d / shard_files.WARC], d, settings,
                                                   fetch_log=d / shard_files.FETCH_LOG))
    return shard_dir


@reports_exhaustion
def update_tables(settings: Settings, cycle: int, shard_dirs: list[str]) -> dict:
    with shard_storage.local_shards(shard_dirs) as dirs, connect(settings) as con, timed(con, cycle, "update"):
        counts = update.merge_shards(con, settings, cycle, dirs)
        shard_times = [json.loads((d / shard_files.TIMING).read_text()) for d in dirs
                       if (d / shard_files.TIMING).exists()]
        # Shards run in parallel: the stage's wall time is its slowest shard's.
        record_seconds(con, cycle, {s: max((t.get(s, 0.0) for t in shard_times), default=0.0)
                                    for s in ("fetch", "parse")})
    return counts


@reports_exhaustion
def refit_models(settings: Settings, cycle: int) -> dict:
    """Link measures, the n-gram and evidence indexes; the reference ranker's index and top-K (its prior reads the new
    PageRank); how much this cycle's pages improved each query and the improvability curve fitted to that
    history; the S' model and the prestige regression. ``seconds`` holds each part's wall time."""
    seconds: dict[str, float] = {}

    def part(name: str, run: Callable[[], Any]) -> Any:
        t0 = time.perf_counter()
        result = run()
        seconds[name] = round(time.perf_counter() - t0, 2)
        return result

    with connect(settings) as con, timed(con, cycle, "refit"), transaction(con):
        graph = part("link_graph", lambda: refit.refit_link_graph(con, cycle))
        grams = part("ngram_index", lambda: ngram_index.update(con, settings, cycle))
        evidence = part("evidence_index", lambda: evidence_index.update(con, cycle))
        indexed = part("ranker_index", lambda: ranker.index_pages(con, cycle, ranker.Analyzer.of(settings)))
        ranked = part("rank_queries", lambda: ranker.rank_queries(con, settings, cycle))
        refit.record_model(con, cycle, "index_epoch", ["postings"], ranked.metrics())
        engine = part("engine_results", lambda: engine_results.merge(con, settings, cycle))
        if engine:
            refit.record_model(con, cycle, "engine_results", ["results_log"], engine)
        part("improvability", lambda: improvability.measure(con, cycle))
        fit = part("improvability_fit", lambda: improvability.fit(con, cycle))
        if settings.odds_bar == "frontier":  # the top-K odds learn against the frontier the next batch draws from
            registry.stage_eligible(con, settings, cycle)
        s_prime = part("s_prime", lambda: score_model.fit(con, settings, cycle))
        prestige_fit = part("prestige", lambda: prestige.fit(con, settings, cycle))
        if settings.policy == "hybrid":
            part("hybrid_mix", lambda: mix.fit(con, settings, cycle))
        return {**graph, **grams, **evidence, **indexed, "query_results": ranked.rows, **engine,
                "improvability_slope": fit.get("slope"), "s_prime_mae": s_prime.get("validation_mae"),
                "s_prime_kept": bool(s_prime.get("kept")),
                "s_prime_drift": s_prime.get("drift", s_prime.get("drift_check", {}).get("drift")),
                "prestige_r2": prestige_fit.get("r2"), "seconds": seconds}


@reports_exhaustion
def select_needy(settings: Settings, cycle: int) -> int:
    with connect(settings) as con, timed(con, cycle, "select_needy"), transaction(con):
        partition = scalar(con, "SELECT interval_start FROM cycles WHERE cycle = ?", [cycle])
        return select_needy_queries(con, settings, cycle, partition).height


@reports_exhaustion
def score(settings: Settings, cycle: int) -> int:
    with connect(settings) as con, timed(con, cycle, "score"), transaction(con):
        return registry.score_frontier(con, settings, cycle)


@reports_exhaustion
def materialize(settings: Settings, cycle: int) -> int:
    with connect(settings) as con, timed(con, cycle, "materialize"), transaction(con):
        return materialize_mod.materialize(con, settings, cycle).height


@reports_exhaustion
def gate(settings: Settings, stage: str, cycle: int, shard_dirs: list[str] | None = None) -> gates.GateReport:
    """Run the quality gate after ``stage``; raises GateFailed with a readable report on failure. Records the
    validation's seconds as ``gate_<stage>`` and the GX import's (0 once this process has it) apart."""
    t0 = time.perf_counter()
    gates.load_gx()
    imported = time.perf_counter() - t0
    with connect(settings) as con:
        record_seconds(con, cycle, {f"gate_{stage}_import": round(imported, 3)})
        with timed(con, cycle, f"gate_{stage}"), shard_storage.local_shards(shard_dirs or []) as dirs:
            outputs = {"fetch": shard_files.FETCH_OUTPUTS, "parse": shard_files.PARSE_OUTPUTS}.get(stage, [])
            shard_files.check_outputs(dirs, list(outputs))
            return gates.run_gate(con, settings, stage, cycle, dirs)


@reports_exhaustion
def close(settings: Settings, cycle: int) -> dict:
    with connect(settings) as con:
        with timed(con, cycle, "close"), transaction(con):
            run_sql(con, "pipeline/stages/close_cycle", cycle=cycle)
            export_snapshot(con, settings, cycle)  # what the Crawl page shows, for the UI to read
        return con.sql("SELECT * FROM v_cycle_summary WHERE cycle = ?", params=[cycle]).pl().to_dicts()[0]


def run_gates(settings: Settings, names: tuple[str, ...], cycle: int, shard_dirs: list[str] | None = None
              ) -> list[str]:
    """A gate task: the gates ``names`` in order; the one-line result of each."""
    return [gate(settings, name, cycle, shard_dirs).message(cycle) for name in names]


def run_cycle(settings: Settings, interval_start: date, progress: Callable[[str], None] = print) -> dict:
    """One whole cycle in this process: the tasks of STAGE_ORDER in turn (a shard task's shards one after the
    other), as the DAG runs them (:func:`run_task`, ``settings`` as they stand); close, the last, gives the cycle's
    summary."""
    inputs: dict[str, Any] = {"start": interval_start, "end": None, "run_id": "manual"}
    # The tasks around fetch and parse share one open database; fetch and parse, which can take long on the live web,
    # leave it to other readers (crawlcycle sql, a report).
    for on_shards, tasks in groupby(STAGE_ORDER, key=lambda t: t.kind == SHARD):
        with nullcontext() if on_shards else held_open(settings):
            for t in tasks:
                if on_shards:
                    out = []
                    for i, shard in enumerate(inputs["shards"], 1):
                        out.append(run_task(t, settings, {**inputs, "shard": shard}))
                        progress(f"cycle {inputs['cycle']}: {t.name} shard {i}/{len(inputs['shards'])} done")
                else:
                    out = run_task(t, settings, inputs)
                if t.gives:
                    inputs[t.gives] = out
                if t.name == "begin":
                    _report_query_log(settings, out, interval_start, progress)
    progress(f"cycle {inputs['cycle']}: {out['fetched']} fetched, {out['errors']} errors, "
             f"{out['new_urls']} new URLs, next batch {out['next_batch']}")
    return out


def _report_query_log(settings: Settings, cycle: int, interval_start: date, progress: Callable[[str], None]) -> None:
    with connect(settings, read_only=True) as con:
        read = scalar(con, "SELECT query_log FROM v_cycle_summary WHERE cycle = ?", [cycle])
    if read.startswith("missing"):
        progress(f"cycle {cycle}: no query-log partition for {interval_start}; {read.removeprefix('missing: ')} "
                 f"(setting missing_query_log = {settings.missing_query_log})")
