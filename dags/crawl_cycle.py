"""crawl_cycle: one DAG run is one crawl cycle. Wiring only; the stages live in crawlcycle.pipeline.stages.

begin -> plan_shards -> fetch[shard] -> parse[shard] -> gate_shards -> update -> gate_update -> refit
-> select_needy -> score -> materialize -> gate_materialize -> close

gate_shards runs the fetch and the parse gates in one task: a gate task pays the import of Great Expectations
unless its executor preloaded it (crawlcycle.airflow.executor does, for LocalExecutor), and the shards' output
reaches the database only through update, after both gates.
"""

from __future__ import annotations

from functools import partial

import pendulum
from airflow.sdk import Param, chain, dag, get_current_context, task

from crawlcycle.airflow.support import GATE_TASKS, dag_settings, db_args, default_args, fetch_args, run_interval
from crawlcycle.settings import POLICIES

settings = dag_settings()

# Every task that opens the DuckDB file runs alone on the writer: DuckDB allows one open at a time.
db_task = partial(task, **db_args(settings))


def _run(**overrides: object) -> object:
    from crawlcycle.pipeline.stages import run_settings

    return run_settings({**get_current_context()["params"], **overrides})


@dag(
    dag_id="crawl_cycle",
    schedule=settings.schedule,
    start_date=pendulum.parse(settings.start_date),
    end_date=pendulum.parse(settings.end_date) if settings.end_date else None,
    catchup=False,
    max_active_runs=1,
    max_consecutive_failed_dag_runs=settings.max_failed_runs,
    default_args=default_args(settings),
    params={
        "policy": Param(None, type=["null", "string"], enum=[None, *POLICIES],
                        description="ordering policy for this run (empty: the policy setting)"),
        "batch_size": Param(None, type=["null", "integer"], minimum=1, description="URLs in the next batch"),
        "per_host_cap": Param(None, type=["null", "integer"], minimum=1, description="most URLs per host"),
    },
    tags=["crawl"],
    doc_md=__doc__,
)
def crawl_cycle() -> None:
    @db_task
    def begin() -> int:
        from crawlcycle.pipeline import stages

        start, end, run_id = run_interval(get_current_context())
        return stages.begin(_run(), start, end, run_id)

    @db_task
    def plan_shards(cycle_no: int) -> list[str]:
        from crawlcycle.pipeline import stages

        return stages.plan_shards(_run(), cycle_no)

    @task(**fetch_args(settings))
    def fetch(shard_dir: str) -> str:
        from crawlcycle.pipeline import stages

        return stages.fetch(_run(), shard_dir)

    @task
    def parse(shard_dir: str) -> str:
        from crawlcycle.pipeline import stages

        # Shards already run in parallel as mapped tasks; a process pool inside a task would
        # re-import the `airflow` entry point in each worker.
        return stages.parse(_run(parse_workers=1), shard_dir)

    @db_task(trigger_rule="none_failed")
    def gate(gate_names: list[str], cycle_no: int, shard_dirs: list[str] | None = None) -> None:
        from crawlcycle.pipeline import stages

        for name in gate_names:
            print(stages.gate(_run(), name, cycle_no, list(shard_dirs or [])).message(cycle_no))

    @db_task(trigger_rule="none_failed")
    def update(cycle_no: int, shard_dirs: list[str]) -> dict:
        from crawlcycle.pipeline import stages

        return stages.update_tables(_run(), cycle_no, list(shard_dirs or []))

    @db_task
    def stage(name: str, cycle_no: int) -> object:
        from crawlcycle.pipeline import stages

        return stages.CYCLE_STAGES[name](_run(), cycle_no)

    cycle_no = begin()
    fetched = fetch.expand(shard_dir=plan_shards(cycle_no))
    parsed = parse.expand(shard_dir=fetched)
    chain(
        gate.override(task_id="gate_shards")(list(GATE_TASKS["gate_shards"]), cycle_no, parsed),
        update(cycle_no, parsed),
        gate.override(task_id="gate_update")(list(GATE_TASKS["gate_update"]), cycle_no),
        *[stage.override(task_id=name)(name, cycle_no) for name in ("refit", "select_needy", "score", "materialize")],
        gate.override(task_id="gate_materialize")(list(GATE_TASKS["gate_materialize"]), cycle_no),
        stage.override(task_id="close")("close", cycle_no),
    )


crawl_cycle()
