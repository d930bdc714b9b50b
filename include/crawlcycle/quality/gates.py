"""Data-quality gates between stages, validated with Great Expectations (GX 1.x).

A gate selects its datasets with DuckDB (``sql/quality/gates/<gate>/*.sql``; fetch and parse read the shards' Parquet
files staged as ``g_*`` views, update and materialize read the tables), hands them to GX as pandas frames and
validates the suites of ``crawlcycle.quality.gate_suites``. Every check's outcome goes to ``dq_results``; GX renders
the gate's validations as HTML data docs under ``<data_dir>/quality/<cycle>/<gate>/`` when setting ``gate_reports``
asks for them (by default when a check failed or warned; the Crawl page links them). A failing check raises
:class:`GateFailed` naming it, its failing rows and a few examples, unless ``gate_warn`` names it.

Importing GX takes several seconds per process: :func:`load_gx` imports it on the first gate a process runs, so
that callers can time the import apart from validation.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import duckdb
import jinja2
import jinja2.bccache

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.canonical import UrlRejected, canonicalize
from crawlcycle.db import execute, statements
from crawlcycle.fetch.robots import stored_robots
from crawlcycle.quality.gate_suites import STAGES, Check, check_names, suites
from crawlcycle.settings import Settings

_EXAMPLES = 3
_log = logging.getLogger(__name__)

# Shard files each gate reads, as the view it reads them through.
_SHARD_VIEWS = {
    "fetch": {"g_fetch_log": shard_files.FETCH_LOG, "g_requests": shard_files.REQUESTS, "g_hosts": shard_files.HOSTS},
    "parse": {"g_pages": shard_files.PAGES, "g_links": shard_files.LINKS},
}


class GateFailed(RuntimeError):
    """A quality gate found bad data; the message says which check and which rows."""


@dataclass(frozen=True)
class Outcome:
    check: str
    success: bool
    failed_rows: int
    examples: list[dict[str, Any]]
    observed: str | None  # aggregate checks: the value they judged
    severity: str  # fail | warn

    def describe(self) -> str:
        if self.observed is not None:
            return f"{self.check}: observed {self.observed}"
        shown = "; ".join(", ".join(f"{k}={v}" for k, v in row.items()) for row in self.examples)
        return f"{self.check}: {self.failed_rows} rows, e.g. {shown}"


@dataclass(frozen=True)
class GateReport:
    gate: str
    outcomes: list[Outcome]
    report: Path | None  # the HTML report's folder, when one was written (setting gate_reports)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success and o.severity == "fail"]

    def message(self, cycle: int) -> str:
        bad = [o for o in self.outcomes if not o.success]
        # The first line alone (Airflow's failure line, an alert) names the checks that stopped the cycle.
        head = (f"gate {self.gate} failed for cycle {cycle} on {', '.join(o.check for o in self.failed)}"
                if self.failed else f"gate {self.gate} passed for cycle {cycle}")
        lines = [f"{head}: {len(self.outcomes) - len(bad)}/{len(self.outcomes)} checks passed"]
        lines += [f"  {o.severity.upper()} {o.describe()}" for o in bad]
        return "\n".join(lines + ([f"  report: {self.report / 'index.html'}"] if self.report else []))


class _CompiledTemplates(jinja2.BytecodeCache):
    """Templates compiled once per process. GX's HTML views each make a new Jinja environment, so every report
    would compile the same templates again: most of a gate's time on a small cycle."""

    def __init__(self) -> None:
        self.codes: dict[str, tuple[str, Any]] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        checksum, code = self.codes.get(bucket.key, (None, None))
        if checksum == bucket.checksum:
            bucket.code = code

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.codes[bucket.key] = (bucket.checksum, bucket.code)


@cache
def load_gx() -> ModuleType:
    """GX, imported on first use in this process (several seconds; later calls are free), its HTML views sharing
    one cache of compiled templates."""
    import great_expectations as gx
    from great_expectations.render.view.view import DefaultJinjaView

    make_view, templates = DefaultJinjaView.__init__, _CompiledTemplates()

    def view_with_cache(self: DefaultJinjaView, *args: Any, **kwargs: Any) -> None:
        make_view(self, *args, **kwargs)
        self.env.bytecode_cache = templates

    DefaultJinjaView.__init__ = view_with_cache
    return gx


@cache
def _context() -> Any:
    """This process's GX context. GX writes a context's whole configuration out again (as YAML, even in memory) on
    every data source, asset, batch definition or site it adds: those are added once per process, not per gate."""
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = load_gx().get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def _data_source(context: Any, stage: str) -> Any:
    sources = context.data_sources.all()
    return sources[stage] if stage in sources else context.data_sources.add_pandas(stage)


def _whole_frame(source: Any, dataset: str) -> Any:
    """The batch definition of a whole frame handed over as dataset ``dataset``."""
    if dataset not in source.get_asset_names():
        return source.add_dataframe_asset(dataset).add_batch_definition_whole_dataframe("all rows")
    return source.get_asset(dataset).get_batch_definition("all rows")


def _stage_shard_views(con: duckdb.DuckDBPyConnection, stage: str, shard_dirs: list[Path]) -> None:
    for view, name in _SHARD_VIEWS.get(stage, {}).items():
        files = [str(d / name).replace("'", "''") for d in shard_dirs if (d / name).exists()]
        if files:
            # A view cannot take parameters: the file list is written in as quoted literals.
            listed = ", ".join(f"'{f}'" for f in files)
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS "
                        f"SELECT * FROM read_parquet([{listed}], union_by_name=true)")
        else:  # a cycle without shards: no rows, with the file's columns
            con.register(view, shard_files.schema(name).empty_table())


def _register_functions(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    robots = stored_robots(con, settings)

    def canon(url: str | None) -> str | None:
        try:
            return canonicalize(url, rules=settings.url_rules) if url is not None else None
        except UrlRejected:
            return None

    con.create_function("canon", canon, ["VARCHAR"], "VARCHAR", null_handling="special")
    con.create_function("robots_allowed", robots.allowed, ["VARCHAR"], "BOOLEAN")


def _severities(settings: Settings) -> dict[str, str]:
    warn = [n.strip() for n in settings.gate_warn.split(",") if n.strip()]
    unknown = sorted(set(warn) - set(check_names()))
    if unknown:
        raise ValueError(f"setting gate_warn: unknown checks {', '.join(unknown)}; known: {', '.join(check_names())}")
    return dict.fromkeys(warn, "warn")


def _datasets(con: duckdb.DuckDBPyConnection, settings: Settings, stage: str, cycle: int,
              shard_dirs: list[Path], checks: list[Check]) -> dict[str, Any]:
    """The pandas frame of every dataset the checks read."""
    _stage_shard_views(con, stage, shard_dirs)
    _register_functions(con, settings)
    params = {"cycle": cycle, "min_delay": settings.min_delay, "max_delay": settings.max_delay,
              "obey_crawl_delay": settings.obey_crawl_delay}
    try:
        return {name: execute(con, statements(f"quality/gates/{stage}/{name}")[0], **params).df()
                for name in dict.fromkeys(c.dataset for c in checks)}
    finally:
        con.remove_function("canon")
        con.remove_function("robots_allowed")


def evaluate(con: duckdb.DuckDBPyConnection, settings: Settings, stage: str, cycle: int,
             shard_dirs: list[Path]) -> GateReport:
    """Validate every check of gate ``stage`` with GX and write its HTML report where setting ``gate_reports`` asks
    for one; record nothing."""
    if stage not in STAGES:
        raise ValueError(f"unknown gate {stage!r}; choose one of {', '.join(STAGES)}")
    severity = _severities(settings)
    checks = suites(settings)[stage]
    gx = load_gx()
    frames = _datasets(con, settings, stage, cycle, shard_dirs, checks)
    context = _context()
    _forget_earlier_gates(context)
    source = _data_source(context, stage)
    outcomes: dict[str, Outcome] = {}
    # A validation per dataset: one over all of a gate's datasets, each check limited to its rows by a row
    # condition, took longer (GX filters the frame again for every metric).
    for dataset, frame in frames.items():
        mine = [c for c in checks if c.dataset == dataset]
        skipped = [c for c in mine if c.sample and len(frame) < settings.gate_min_sample]
        for c in skipped:
            outcomes[c.name] = Outcome(c.name, True, 0, [], f"skipped: {len(frame)} rows, fewer than "
                                       f"gate_min_sample ({settings.gate_min_sample})", severity.get(c.name, "fail"))
        suite = context.suites.add(gx.ExpectationSuite(name=f"{stage}.{dataset}"))
        run = [c for c in mine if c not in skipped]
        for c in run:
            suite.add_expectation(getattr(gx.expectations, c.expectation)(**c.kwargs, meta={"check": c.name,
                                                                                            "meaning": c.meaning}))
        batch = _whole_frame(source, dataset)
        result = gx.ValidationDefinition(name=f"{stage}.{dataset}", data=batch, suite=suite).run(
            batch_parameters={"dataframe": frame},
            result_format={"result_format": "SUMMARY", "partial_unexpected_count": _EXAMPLES})
        for r in result.results:
            name = r.expectation_config.meta["check"]
            outcomes[name] = _outcome(name, r, frame, severity.get(name, "fail"))
    ordered = [outcomes[c.name] for c in checks]
    report = Path(settings.data_dir) / "quality" / f"{cycle:05d}" / stage
    shutil.rmtree(report, ignore_errors=True)  # a re-run's report replaces the earlier one
    wanted = settings.gate_reports == "always" or (settings.gate_reports == "problems"
                                                   and any(not o.success for o in ordered))
    if wanted:
        _write_report(context, gx, report)
    return GateReport(stage, ordered, report if wanted else None)


def _forget_earlier_gates(context: Any) -> None:
    """A report shows its own gate's suite and results only: the earlier gates' go."""
    for definition in context.validation_definitions.all():
        context.validation_definitions.delete(definition.name)
    for suite in context.suites.all():
        context.suites.delete(suite.name)
    for key in context.validation_results_store.list_keys():
        context.validation_results_store.remove_key(key)


def _write_report(context: Any, gx: ModuleType, report: Path) -> None:
    """GX's data docs of the gate's validations just run, in folder ``report``."""
    # Read by build_data_docs as it is; setting it does not write the configuration out. The validation pages show
    # every check with its outcome: the suites' own pages would only repeat them.
    context.variables.data_docs_sites = {"gates": {
        "class_name": "SiteBuilder", "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        "site_section_builders": {"expectations": "0", "profiling": "0"},
        "store_backend": {"class_name": "ReportFiles", "module_name": "crawlcycle.quality.report_files",
                          "base_directory": str(report),
                          "shared_static": str(report.parents[1] / "static" / gx.__version__)}}}
    context.build_data_docs()


def _outcome(name: str, r: Any, frame: Any, severity: str) -> Outcome:
    res = r.result or {}
    if r.exception_info and r.exception_info.get("raised_exception"):
        return Outcome(name, False, 0, [], f"error: {r.exception_info.get('exception_message')}", severity)
    if "unexpected_count" in res:
        rows = [i for i in res.get("partial_unexpected_index_list") or [] if i in frame.index][:_EXAMPLES]
        examples = frame.loc[rows].to_dict("records")
        return Outcome(name, bool(r.success), int(res["unexpected_count"]), examples, None, severity)
    observed = res.get("observed_value")
    return Outcome(name, bool(r.success), 0 if r.success else 1, [],
                   f"{observed:.4g}" if isinstance(observed, float) else str(observed), severity)


def run_gate(con: duckdb.DuckDBPyConnection, settings: Settings, stage: str, cycle: int,
             shard_dirs: list[Path]) -> GateReport:
    """Evaluate, store in dq_results (replacing this gate's earlier rows), log, and raise on failure."""
    gate = evaluate(con, settings, stage, cycle, shard_dirs)
    con.execute("DELETE FROM dq_results WHERE cycle = ? AND gate = ?", [cycle, stage])
    con.executemany("INSERT INTO dq_results (cycle, gate, expectation, success, severity, failed_rows, examples, "
                    "observed, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [[cycle, stage, o.check, o.success, o.severity, o.failed_rows,
                      o.describe() if o.examples else None, o.observed,
                      str(gate.report / "index.html") if gate.report else None]
                     for o in gate.outcomes])
    message = gate.message(cycle)
    _log.log(logging.WARNING if any(not o.success for o in gate.outcomes) else logging.INFO, message)
    if gate.failed:
        raise GateFailed(message)
    return gate
