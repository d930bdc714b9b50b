"""crawl_cycle: one DAG run is one crawl cycle. Wiring only; the stages live in crawlcycle.cycle."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pendulum
from airflow.sdk import Param, dag, get_current_context, task
from crawlcycle.airflow_support import DUCKDB_POOL, dag_settings, run_interval

settings = dag_settings()

# Every task that opens the DuckDB file runs in a one-slot pool: DuckDB allows one open at a time.
db_task = partial(task, pool=DUCKDB_POOL)


def _run() -> object:
    from crawlcycle.cycle import run_settings

    return run_settings(get_current_context()["params"])


@dag(
    dag_id="crawl_cycle",
    schedule=settings.schedule,
    start_date=pendulum.parse(settings.start_date),
    end_date=pendulum.parse(settings.end_date) if settings.end_date else None,
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(seconds=10)},
    params={
        "policy": Param(None, type=["null", "string"], description="ordering policy for this run"),
        "batch_size": Param(None, type=["null", "integer"], minimum=1, description="URLs in the next batch"),
        "per_host_cap": Param(None, type=["null", "integer"], minimum=1, description="most URLs per host"),
    },
    tags=["crawl"],
    doc_md=__doc__,
)
def crawl_cycle() -> None:
    @db_task
    def begin() -> int:
        from crawlcycle import cycle

        start, end, run_id = run_interval(get_current_context())
        return cycle.begin(_run(), start, end, run_id)

    @db_task
    def plan_shards(cycle_no: int) -> list[str]:
        from crawlcycle import cycle

        return cycle.plan_shards(_run(), cycle_no)

    @task
    def fetch(shard_dir: str) -> str:
        from crawlcycle import cycle

        return cycle.fetch(_run(), shard_dir)

    @task
    def parse(shard_dir: str) -> str:
        from crawlcycle import cycle

        return cycle.parse(_run(), shard_dir)

    @db_task(trigger_rule="none_failed")
    def gate(stage: str, cycle_no: int, shard_dirs: list[str] | None = None) -> None:
        from crawlcycle import cycle

        cycle.gate(_run(), stage, cycle_no, list(shard_dirs or []))

    @db_task(trigger_rule="none_failed")
    def update(cycle_no: int, shard_dirs: list[str]) -> dict:
        from crawlcycle import cycle

        return cycle.update_tables(_run(), cycle_no, list(shard_dirs or []))

    @db_task
    def refit(cycle_no: int) -> dict:
        from crawlcycle import cycle

        return cycle.refit_models(_run(), cycle_no)

    @db_task
    def select_needy(cycle_no: int) -> int:
        from crawlcycle import cycle

        return cycle.select_needy(_run(), cycle_no)

    @db_task
    def score(cycle_no: int) -> int:
        from crawlcycle import cycle

        return cycle.score(_run(), cycle_no)

    @db_task
    def materialize(cycle_no: int) -> int:
        from crawlcycle import cycle

        return cycle.materialize(_run(), cycle_no)

    @db_task
    def close(cycle_no: int) -> dict:
        from crawlcycle import cycle

        return cycle.close(_run(), cycle_no)

    cycle_no = begin()
    fetched = fetch.expand(shard_dir=plan_shards(cycle_no))
    gate_fetch = gate.override(task_id="gate_fetch")("fetch", cycle_no, fetched)
    parsed = parse.expand(shard_dir=fetched)
    gate_fetch >> parsed
    gate_parse = gate.override(task_id="gate_parse")("parse", cycle_no, parsed)
    updated = update(cycle_no, parsed)
    gate_parse >> updated
    gate_update = gate.override(task_id="gate_update")("update", cycle_no)
    updated >> gate_update
    refitted = refit(cycle_no)
    gate_update >> refitted
    needy = select_needy(cycle_no)
    refitted >> needy
    scored = score(cycle_no)
    needy >> scored
    chosen = materialize(cycle_no)
    scored >> chosen
    gate_materialize = gate.override(task_id="gate_materialize")("materialize", cycle_no)
    chosen >> gate_materialize >> close(cycle_no)


crawl_cycle()
