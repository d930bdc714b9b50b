"""The ``crawlcycle`` command. Each command takes the settings it uses as flags (``--min-delay 2``), above the
TOML file and the environment in precedence; its ``--help`` lists them by section."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from datetime import date
from pathlib import Path
from typing import NoReturn

from crawlcycle.quality.gate_suites import STAGES
from crawlcycle.settings import CONFIG_ENV, SECTIONS, SETTING_NAMES, InputError, Settings, SettingsError, describe
from crawlcycle.settings.sources import load_settings

CONFIG_NAME = "crawlcycle.toml"
DEFAULT_PORT = 8080
PORT_HELP = f"port of Airflow's UI and API (default {DEFAULT_PORT}; refused when in use)"
WIDE_HELP = ("print every text whole, each row on one line, instead of cutting texts at 80 characters with '…' "
             "(for a pager, `less -S`, or a file)")


def _settings_parent(sections: tuple[str, ...] = SECTIONS, exclude: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    """The flags of the settings a command uses, one group per section, but those in ``exclude`` (a command that
    gives the name its own meaning)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--config", help=f"TOML settings file (default: ${CONFIG_ENV}, else the {CONFIG_NAME} of this "
                                         "folder or the nearest folder above it)")
    groups = {s: parent.add_argument_group(f"[{s}] settings (override the TOML file and CRAWLCYCLE_* variables)")
              for s in sections}
    for section, name, default, help_text in describe():
        if section in groups and name not in exclude:
            groups[section].add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="V",
                                         help=f"{help_text} (default: {default!r})")
    return parent


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A usage error in one line, pointing at the command's help, instead of argparse's usage block."""
        self.exit(2, f"{self.prog}: {message} (the options and settings it takes: {self.prog} --help)\n")


def find_config(start: Path) -> Path | None:
    """The crawlcycle.toml of ``start`` or of the nearest folder above it, as git finds its repository."""
    for folder in (start, *start.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    return None


def _config(args: argparse.Namespace) -> Path | None:
    """The settings file: --config, else $CRAWLCYCLE_CONFIG, else the one found from the current folder.
    Only the command searches: load_settings reads what it is given, so tests and Airflow never pick up
    a stray file."""
    given = args.config or os.environ.get(CONFIG_ENV)
    return Path(given).resolve() if given else find_config(Path.cwd())


def _settings(args: argparse.Namespace, fetches: bool = False) -> Settings:
    """Settings of the command; ``fetches``: it sends requests, so it needs a user agent with a contact."""
    settings = load_settings(_config(args), overrides={n: getattr(args, n, None) for n in SETTING_NAMES})
    return settings.require_user_agent() if fetches else settings


def cmd_init(args: argparse.Namespace) -> int:
    from crawlcycle.pipeline.stages import init

    out = init(_settings(args))
    rejected = f", {out['rejected']} seed lines rejected (see url_rejects)" if out["rejected"] else ""
    print(f"database ready: {out['migrations']} migrations applied, {out['seeds']} seed URLs admitted{rejected}")
    return 0


def cmd_demo_web(args: argparse.Namespace) -> int:
    from crawlcycle.devtools import demo

    settings = _settings(args)
    days = demo.demo_days(settings, regenerate=args.regenerate)
    more = f" .. {days[-1][1]} ({len(days)} days from {days[0][0]})" if len(days) > 1 else ""
    print(f"demo web: {days[0][1]}{more}")
    if args.serve:
        demo.serve_forever(settings)
    return 0


def cmd_cycle(args: argparse.Namespace) -> int:
    from crawlcycle.pipeline.stages import run_cycle
    from crawlcycle.quality.gates import GateFailed

    settings = _settings(args, fetches=True)
    day = date.fromisoformat(args.date) if args.date else date.today()
    try:
        run_cycle(settings, day, progress=lambda m: print(m, flush=True))
    except GateFailed as e:
        # its report went to the log; the cycle stays open for a fix and a re-run of the same date
        print(f"crawlcycle: the cycle stopped at a quality gate: {str(e).splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from crawlcycle.airflow.task_overhead import metadata_url
    from crawlcycle.ui.report import print_report, print_setting_changes

    if args.settings:
        print_setting_changes(_settings(args), wide=args.wide)
    else:
        print_report(_settings(args), metadata_url(_config(args)), wide=args.wide)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from crawlcycle.pipeline import shard_storage, stages
    from crawlcycle.quality.gates import GateFailed

    settings = _settings(args)
    shards = shard_storage.stored_shards(settings, args.cycle)
    if args.stage in ("fetch", "parse") and not shards:
        print(f"no shard files of cycle {args.cycle} in {shard_storage.cycle_location(settings, args.cycle)}",
              file=sys.stderr)
        return 2
    try:
        print(stages.gate(settings, args.stage, args.cycle, shards).message(args.cycle))
    except GateFailed as e:
        print(e)
        return 1
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from crawlcycle.contracts.canonical import UrlRejected, canonicalize
    from crawlcycle.fetch.fetcher import fetch_urls

    settings = _settings(args, fetches=True)
    path = Path(args.urls)
    if not path.is_file():
        raise SettingsError(f"--urls: file {path} does not exist")
    urls = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            try:
                urls.append(canonicalize(line.strip(), rules=settings.url_rules))
            except UrlRejected as e:
                # Kept as given: the fetcher logs it with an error class instead of dropping it.
                print(f"note: {line.strip()} is not crawlable ({e.reason})", file=sys.stderr)
                urls.append(line.strip())
    result = fetch_urls(urls, settings, Path(args.out))
    print(result)
    return 0


def cmd_canon(args: argparse.Namespace) -> int:
    from crawlcycle.contracts.canonical import canon_main

    return canon_main(sys.stdin, sys.stdout, _settings(args).url_rules)


def cmd_demo(args: argparse.Namespace) -> int:
    from crawlcycle.devtools import demo

    return demo.run_demo(_settings(args, fetches=True), cycles=args.cycles)


def cmd_celery_demo(args: argparse.Namespace) -> int:
    from crawlcycle.airflow.environment import ROOT
    from crawlcycle.devtools.celery_demo import run_celery_demo

    result = run_celery_demo(_settings(args, fetches=True), ROOT / "data" / "celery-demo", cycles=args.cycles)
    return 1 if result["problems"] else 0


def cmd_ui(args: argparse.Namespace) -> int:
    from crawlcycle.devtools import demo

    return demo.run_ui(_settings(args, fetches=True), port=args.port)


def cmd_airflow(args: argparse.Namespace) -> int:
    from crawlcycle.airflow.environment import airflow_home
    from crawlcycle.devtools.airflow_stack import AirflowStack, run_until_stopped

    config = _config(args)
    if config is None or not config.is_file():
        raise SettingsError(f"--config: {config or CONFIG_NAME}: no settings file (crawlcycle airflow runs the crawl "
                            "a settings file describes)")
    settings = _settings(args, fetches=True)
    if not Path(settings.db_path).is_file():
        raise SettingsError(f"setting db_path: {settings.db_path}: no crawl database yet; run `crawlcycle init "
                            f"--config {config}` first")
    # The tasks read the file itself (CRAWLCYCLE_CONFIG): an edit applies from the next cycle's begin.
    return run_until_stopped(AirflowStack(airflow_home(config), port=args.port, config=config))


def cmd_sql(args: argparse.Namespace) -> int:
    import duckdb

    from crawlcycle.db import connect
    from crawlcycle.ui.report import table_config

    with connect(_settings(args), read_only=True) as con, table_config(args.wide, rows=args.rows):
        try:
            result = con.sql(args.query)
        except duckdb.Error as e:  # a typo or a write to the read-only database: DuckDB's own first line
            print(f"crawlcycle: sql: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        print(result.pl() if result is not None else "ok")
    return 0


def cmd_fault_run(args: argparse.Namespace) -> int:
    from crawlcycle.devtools import demo, fault_run

    settings = _settings(args, fetches=True)
    out = Path(args.out) if args.out else Path(settings.data_dir) / "fault-run"
    if settings.snapshot:
        if not args.queries:
            raise SettingsError("--queries: a query-log file is needed with the snapshot setting")
        settings = fault_run.snapshot_settings(settings, Path(args.queries), args.cycles, out)
    with demo.start_web(settings):
        result = fault_run.fault_run(settings, out, args.cycles, args.kills, args.seed, args.retry,
                                     progress=lambda m: print(m, flush=True))
    print("\n".join(fault_run.report_lines(result)))
    print(f"details: {out / 'result.json'}, where each kill landed: {out / 'killed' / 'kills.jsonl'}")
    return 1 if fault_run.failed(result) else 0


def cmd_soak(args: argparse.Namespace) -> int:
    from crawlcycle.devtools import soak_run

    settings = _settings(args, fetches=True)
    out = Path(args.out) if args.out else Path(settings.data_dir) / "soak"
    result = soak_run.soak(settings, out, args.cycles, args.kills, args.seed, progress=lambda m: print(m, flush=True))
    print("\n".join(soak_run.report_lines(result)))
    print(f"details: {out / 'result.json'}, where each task kill landed: {out / 'airflow' / 'kills.jsonl'}")
    return 1 if soak_run.failed(result) else 0


def cmd_settings(args: argparse.Namespace) -> int:
    config = _config(args)
    settings = _settings(args)
    print(f"# config: {config}" if config else f"# config: none ({CONFIG_NAME} not found here or above; "
          "defaults, environment and flags only)")
    for section in SECTIONS:
        print(f"[{section}]")
        for name, value in settings.section(section).items():
            source = settings.sources.get(name)
            print(f"{name} = {value!r}" + (f"  # {source}" if source else ""))
    return 0


def _names(value: str, known: tuple[str, ...], flag: str, what: str) -> list[str]:
    """A flag naming one or more of ``known`` (comma-separated), or 'all'."""
    if value == "all":
        return list(known)
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise SettingsError(f"{flag}: unknown {what} {', '.join(unknown) or repr(value)}; choose from "
                            f"{', '.join(known)}, or all")
    return names


def _snapshots(groups: list[list[str]]) -> tuple[list[Path], list[int] | None]:
    """``--snapshot``: one occurrence names the files of one snapshot; several name the versions of a series, one
    file each with the cycle it starts at (``FILE@CYCLE``; the first starts at cycle 1)."""

    def split(token: str) -> tuple[Path, int | None]:
        path, at, cycle = token.rpartition("@")
        if at and cycle.isdigit() and not Path(token).exists():
            return Path(path), int(cycle)
        return Path(token), None

    if len(groups) == 1:
        (one,) = groups
        parts = [split(t) for t in one]
        if len(parts) == 1 and parts[0][1] not in (None, 1):
            raise SettingsError(f"--snapshot: {one[0]}: the first version starts at cycle 1")
        if len(parts) > 1 and any(c is not None for _, c in parts):
            raise SettingsError("--snapshot: a series names one file per --snapshot (FILE@CYCLE)")
        return [p for p, _ in parts], None
    if any(len(g) != 1 for g in groups):
        raise SettingsError("--snapshot: a series names one file per --snapshot (FILE@CYCLE)")
    parts = [split(g[0]) for g in groups]
    missing = [g[0] for g, (_, c) in zip(groups[1:], parts[1:], strict=True) if c is None]
    if missing:
        raise SettingsError(f"--snapshot: {missing[0]} needs the cycle it starts at (FILE@CYCLE)")
    return [p for p, _ in parts], [1 if parts[0][1] is None else parts[0][1], *(c for _, c in parts[1:])]


def cmd_simulate(args: argparse.Namespace) -> int:
    from crawlcycle.contracts.refresh_policies import NAMES as REFRESH_POLICIES
    from crawlcycle.evaluation.crawl_metrics import ORACLES
    from crawlcycle.evaluation.simulator import simulate
    from crawlcycle.settings import POLICIES

    settings = _settings(args, fetches=True)
    policies = (_names(args.policies, (*POLICIES, *ORACLES.values()), "--policy", "policy") if args.policies
                else [settings.policy])
    refresh = (_names(args.refresh_policies, REFRESH_POLICIES, "--refresh-policy", "refresh policy")
               if args.refresh_policies else None)
    snapshots, starts = _snapshots(args.snapshots)
    # By default each run gets its own folder where the Crawl page looks for the newest curves.
    out = Path(args.out) if args.out else Path(settings.data_dir) / "simulations" / time.strftime("%Y%m%d-%H%M%S")
    try:
        summaries = simulate(settings, snapshots, Path(args.queries), Path(args.seeds), policies, args.cycles, out,
                             progress=lambda m: print(m, flush=True), jobs=args.jobs,
                             cache=Path(args.cache) if args.cache else None, starts=starts, switch=args.switch,
                             switch_seed=args.switch_seed, refresh_policies=refresh)
    except ValueError as e:
        raise SettingsError(str(e)) from None
    for name, summary in summaries.items():
        judged = "; ".join(judge + " " + ", ".join(f"{b} {v['pct_of_ideal']:.2f}" if v["pct_of_ideal"] is not None
                                                   else f"{b} -" for b, v in budgets.items())
                           for judge, budgets in summary["budgets_by_judge"].items())
        repo = summary["repository"]
        means, when = ((repo["mean_after_first_switch"], f"cycles >= {repo['first_switch']}")
                       if repo["mean_after_first_switch"] else (repo["mean"], "all cycles"))
        figures = ", ".join(f"{k} {means[k]:.3f}" for k in ("quality", "quality_bm25s", "freshness", "age")
                            if means[k] is not None)
        print(f"{name}: share of ideal at {judged}; repository ({when}) {figures or '-'}; {summary['seconds']} s")
    print(f"outputs in {out}")
    return 0


def cmd_fit_ranker(args: argparse.Namespace) -> int:
    import json

    from crawlcycle.ranking.ranker_fit import fit_ranker

    settings = _settings(args)
    fit = fit_ranker(settings, date.fromisoformat(args.day) if args.day else None, args.queries,
                     progress=(lambda m: None) if args.quiet else (lambda m: print(m, flush=True)))
    print(f"results log dt={fit.day}: {fit.queries:,} queries, {fit.results:,} results on pages the crawl indexed "
          f"({fit.results_elsewhere:,} on pages it has not: left out); {fit.trials} trials")
    print(f"top-{settings.top_k} overlap with your engine: {fit.before:.3f} with the settings now, "
          f"{fit.after:.3f} fitted")
    if fit.changed:
        print("put these in the [ranking] section of your settings file:")
        print("\n".join(f"{name} = {json.dumps(value)}" for name, value in fit.changed.items()))
    else:
        print("the settings now fit best: nothing to change")
    return 0


def cmd_airflow_env(args: argparse.Namespace) -> int:
    from crawlcycle.airflow.environment import airflow_env, airflow_home
    from crawlcycle.airflow.instance_lock import running

    config = _config(args)
    home = airflow_home(config)
    held = running(home)
    port = args.port or (held.port if held else DEFAULT_PORT)  # the port of the Airflow that runs on this crawl
    for key, value in airflow_env(home, port, config=config).items():
        print(f"export {key}='{value}'")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="crawlcycle", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    crawl = tuple(s for s in SECTIONS if s != "demo")

    def add(name: str, fn, help_text: str, sections: tuple[str, ...] = SECTIONS,
            exclude: tuple[str, ...] = ()) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[_settings_parent(sections, exclude)], help=help_text, description=help_text)
        p.set_defaults(fn=fn)
        return p

    add("init", cmd_init, "create or migrate the DuckDB file and admit the seed URLs", ("storage", "scope", "parse"))
    p = add("demo-web", cmd_demo_web, "generate the demo web (if missing) and serve it on loopback",
            ("storage", "orchestration", "demo"))
    p.add_argument("--serve", action="store_true", help="serve it in the foreground after generating")
    p.add_argument("--regenerate", action="store_true", help="write it again even if it exists")
    p = add("cycle", cmd_cycle, "run one whole crawl cycle in this process (no scheduler needed)", crawl)
    p.add_argument("--date", help="data interval start, YYYY-MM-DD: selects the query-log partition (default today)")
    p = add("report", cmd_report, "print the per-cycle summary", ("storage",))
    p.add_argument("--settings", action="store_true",
                   help="print instead which settings changed between cycles: cycle, setting, old → new, source")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    p = add("check", cmd_check, "run one quality gate on a cycle's output; exit 1 when it fails",
            ("storage", "parse", "quality"))
    p.add_argument("stage", choices=STAGES, help="the gate: the stage whose output it checks")
    p.add_argument("--cycle", type=int, required=True, help="cycle number (see `crawlcycle report`)")
    p = add("fetch", cmd_fetch, "fetch a list of URLs under the crawl's politeness rules",
            ("fetch", "politeness", "parse"))
    p.add_argument("--urls", required=True, help="file of URLs, one per line")
    p.add_argument("--out", required=True, help="output folder for the WARC file and the fetch log (Parquet)")
    add("canon", cmd_canon, "canonicalize URLs from stdin: one line each, the URL or '-<TAB>reason'", ("parse",))
    p = add("demo", cmd_demo, "fresh demo: demo web + Airflow, backfill N cycles, print the report")
    p.add_argument("--cycles", type=int, default=3, help="cycles to run (default 3)")
    p = add("celery-demo", cmd_celery_demo, "the demo under CeleryExecutor on this machine (PostgreSQL, Redis, two "
            "general workers and the writer); print which worker ran each task")
    p.add_argument("--cycles", type=int, default=2, help="cycles to run (default 2)")
    p = add("ui", cmd_ui, "serve the demo web and start Airflow (UI on http://127.0.0.1:8080) until Ctrl-C or "
                          "SIGTERM, which stop both")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=PORT_HELP)
    p = add("airflow", cmd_airflow, "start Airflow on the crawl of a settings file (scheduler, UI on "
            "http://127.0.0.1:8080; its home .airflow beside the file) until Ctrl-C or SIGTERM", ())
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=PORT_HELP)
    p = add("sql", cmd_sql, "run a read-only SQL query on the crawl database and print the result", ("storage",))
    p.add_argument("query", help="e.g. \"SELECT * FROM v_next_batch LIMIT 20\"")
    p.add_argument("--rows", type=int, default=50, help="rows to print (default 50)")
    p.add_argument("--wide", action="store_true", help=WIDE_HELP)
    add("settings", cmd_settings, "print every setting as resolved from file, environment and flags, each not at its "
                                  "default with where it came from")
    # --snapshot takes WARC files and versions here, --policy and --refresh-policy also lists and 'all': not the
    # settings of those names.
    p = add("simulate", cmd_simulate, "compare ordering and refresh policies offline: real cycles over WARC "
            "snapshots, one frozen web or a series of versions", exclude=("snapshot", "policy", "refresh_policy"))
    p.add_argument("--snapshot", dest="snapshots", nargs="+", action="append", required=True,
                   metavar="WARC[@CYCLE]",
                   help="WARC files of one snapshot (the whole web of the run); or, repeated, the versions of a "
                        "web that changes, FILE@CYCLE each, the cycle it starts at (the first may leave out @1)")
    p.add_argument("--switch", choices=("drawn", "at-start"), default="drawn",
                   help="how a series moves a URL to its next version: at a cycle drawn for it between the two "
                        "versions' starts (default), or at the next version's start")
    p.add_argument("--switch-seed", type=int, default=0, help="seed of the drawn switches (default 0)")
    p.add_argument("--queries", required=True, help="query-log file (.tsv or .parquet), read by every cycle")
    p.add_argument("--seeds", required=True, help="seed URLs, one per line")
    p.add_argument("--policy", dest="policies",
                   help="ordering policy, a comma-separated list, or 'all' for every policy; oracle and "
                        "oracle_bm25s run the reference ordering by each judge's true impact (default: the policy "
                        "setting)")
    p.add_argument("--refresh-policy", dest="refresh_policies",
                   help="refresh policy, a comma-separated list, or 'all' (default: the refresh_policy setting on "
                        "a series; none on one snapshot unless the settings name one)")
    p.add_argument("--cycles", type=int, default=3, help="cycles per policy (default 3)")
    p.add_argument("--out", help="output folder: order.csv, curve.csv, quality.csv, summary.json, curve.png, "
                                 "quality.png (default: <data_dir>/simulations/<date-time>)")
    p.add_argument("--jobs", type=int, default=1, help="runs side by side, each in its own process and with its own "
                                                       "web server (default 1; more than the cores gains nothing)")
    p.add_argument("--cache", help="folder keeping ground truths and parse results between runs "
                                   "(default: <data_dir>/simulation-cache)")
    p = add("fit-ranker", cmd_fit_ranker, "fit the reference ranker's analyzer, field weights, k1 and prestige "
            "weight to your engine's result lists (setting results_log_dir) on a copy of the crawl; print the top-K "
            "overlap before and after and the settings to change", ("storage", "ranking"))
    p.add_argument("--day", help="the results-log partition, YYYY-MM-DD (default: the latest)")
    p.add_argument("--queries", type=int, default=2000, help="queries compared at most, a seeded sample (default "
                                                             "2000)")
    p.add_argument("--quiet", action="store_true", help="print only the outcome, not each trial")
    p = add("fault-run", cmd_fault_run, "crawl N cycles straight and again with SIGKILLs at random points, each "
            "killed task retried; compare every table; exit 1 on any difference")
    p.add_argument("--cycles", type=int, default=10, help="cycles of each crawl (default 10)")
    p.add_argument("--kills", type=int, default=200, help="kills spread over the killed crawl's tasks (default 200)")
    p.add_argument("--seed", type=int, default=1, help="seed of the kill points: the same seed, the same kills")
    p.add_argument("--retry", choices=("task", "cycle"), default="task",
                   help="after a kill, retry the task as Airflow does (default), or run the whole cycle again as "
                        "`crawlcycle cycle --date` does")
    p.add_argument("--queries", help="query-log file (.tsv or .parquet) for every cycle; needed with --snapshot")
    p.add_argument("--out", help="folder of the two crawls and result.json (default: <data_dir>/fault-run)")
    p = add("soak", cmd_soak, "daily cycles scheduled by Airflow's scheduler (catching up from N days back) on the "
            "changing demo web while SIGKILLs hit its scheduler, API server, DAG processor, task processes and the "
            "writer mid-transaction; compare every table with a clean crawl; exit 1 on any difference")
    p.add_argument("--cycles", type=int, default=14, help="daily cycles, the last one yesterday's (default 14)")
    p.add_argument("--kills", type=int, default=30, help="kills spread over the five targets (default 30)")
    p.add_argument("--seed", type=int, default=1, help="seed of the kill schedule: the same seed, the same kills")
    p.add_argument("--out", help="folder of the two crawls and result.json (default: <data_dir>/soak)")
    p = add("airflow-env", cmd_airflow_env, "print the environment for using the airflow CLI on the crawl of a "
            "settings file (its Airflow home .airflow beside the file; the port of the Airflow running on it)", ())
    p.add_argument("--port", type=int, help=f"port of Airflow's API (default: the running instance's, else "
                                            f"{DEFAULT_PORT})")
    return parser


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each subcommand of ``build_parser()``, by name, in its order."""
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


# The modules of the install's extras (pyproject.toml), by the extra that brings them.
EXTRAS = {"matplotlib": "lab", "bm25s": "lab", "tantivy": "lab", "celery": "celery",
          "psycopg2": "celery", "redis": "celery", "asyncpg": "celery", "airflow.providers.celery": "celery"}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, so the line names the command whose --help to read
        commands(parser)[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    # SIGTERM (a service manager, `timeout`, `kill`) unwinds like Ctrl-C, so every process a command started (Airflow,
    # the demo web, PostgreSQL, Redis) is stopped on the way out; SIGINT is set too because a shell starts
    # background jobs with it ignored.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print(f"crawlcycle {args.command}: interrupted; every process it started is stopped", file=sys.stderr)
        return 130
    except (InputError, FileNotFoundError) as e:
        print(f"crawlcycle: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`crawlcycle settings | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except ModuleNotFoundError as e:
        extra = next((x for prefix, x in EXTRAS.items() if (e.name or "").startswith(prefix)), None)
        if extra is None:
            raise
        print(f"crawlcycle {args.command}: needs the {extra} extra, which is not installed (module {e.name}): "
              f"pip install 'crawlcycle[{extra}]'", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
