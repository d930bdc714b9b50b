"""crawl_cycle: one DAG run is one crawl cycle. Wiring only: the tasks and their order are
crawlcycle.pipeline.stage_order.STAGE_ORDER, the stages live in crawlcycle.pipeline.stages.

fetch and parse are mapped over the host shards; every other task opens the DuckDB file and runs alone. A gate
task pays the import of Great Expectations unless its executor preloaded it (crawlcycle.airflow.executor does,
for LocalExecutor).
"""

from __future__ import annotations

from functools import partial

import pendulum
from airflow.sdk import Param, chain, dag, get_current_context, task

from crawlcycle.airflow.support import dag_settings, db_args, default_args, fetch_args, policy_doc, run_interval
from crawlcycle.pipeline.stage_order import GATE, SHARD, STAGE_ORDER
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
        "policy": Param(None, type=["null", "string"], enum=[None, *POLICIES], description_md=policy_doc()),
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

    # STAGE_ORDER: begin gives the cycle number and plan_shards the shard folders, each shard task is mapped over
    # the folders the one before it returned, and the tasks after them run one after the other.
    cycle_no = begin()
    if settings.missing_query_log == "wait":
        # the interval's query-log partition may land late: begin waits for it, giving the slot up between pokes
        @task.sensor(poke_interval=60, timeout=settings.query_log_wait, mode="reschedule")
        def query_log_partition() -> bool:
            from crawlcycle.ranking.query_log import partition_exists

            return partition_exists(_run(), run_interval(get_current_context())[0])

        query_log_partition() >> cycle_no
    shard_dirs = plan_shards(cycle_no)
    per_shard = {"fetch": fetch, "parse": parse}
    serial = []
    for t in STAGE_ORDER[2:]:
        if t.kind == SHARD:
            shard_dirs = per_shard[t.name].expand(shard_dir=shard_dirs)
        elif t.kind == GATE:
            serial.append(gate.override(task_id=t.name)(list(t.gates), cycle_no, shard_dirs if t.shards else None))
        elif t.name == "update":
            serial.append(update(cycle_no, shard_dirs))
        else:
            serial.append(stage.override(task_id=t.name)(t.name, cycle_no))
    chain(*serial)


crawl_cycle()
