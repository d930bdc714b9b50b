"""crawl_cycle: one DAG run is one crawl cycle. Wiring only: the tasks and their order are
crawlcycle.pipeline.stage_order.STAGE_ORDER, the stages live in crawlcycle.pipeline.stages.

fetch and parse are mapped over the host shards; every other task opens the DuckDB file and runs alone. A gate
task pays the import of Great Expectations unless its executor preloaded it (crawlcycle.airflow.executor does,
for LocalExecutor).

A cycle runs with the settings its begin resolved (the settings file, the environment, this run's parameters) and
recorded in cycles.settings: every later task, and every retry, reads that record, so an edit of the file applies
from the next cycle. What this file reads when the scheduler parses it (schedule, dates, retries, timeouts, the
writer queue, the query-log sensor of missing_query_log = wait) and where the state is (the storage settings) are
read as they stand: crawlcycle.settings.LIVE.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, chain, dag, get_current_context, task

from crawlcycle.airflow.support import (
    TASK_OVERRIDES,
    choice_doc,
    dag_settings,
    default_args,
    run_interval,
    task_args,
)
from crawlcycle.contracts.refresh_policies import NAMES as REFRESH_POLICIES
from crawlcycle.pipeline.stage_order import GATE, SHARD, STAGE_ORDER, TASKS
from crawlcycle.settings import POLICIES

settings = dag_settings()


def _live(task_name: str) -> object:
    """The settings as they stand for a task: the run's parameters over the settings, and the task's own overrides."""
    from crawlcycle.pipeline.stages import run_settings

    return run_settings({**get_current_context()["params"], **TASK_OVERRIDES.get(task_name, {})})


def _run(task_name: str, inputs: dict[str, object]) -> object:
    """Run a task of the cycle with the settings begin recorded (begin: with those as they stand)."""
    from crawlcycle.pipeline.stages import run_task

    return run_task(TASKS[task_name], _live(task_name), inputs)


@dag(
    dag_id="crawl_cycle",
    schedule=settings.schedule,
    start_date=pendulum.parse(settings.start_date),
    end_date=pendulum.parse(settings.end_date) if settings.end_date else None,
    catchup=settings.catchup,
    max_active_runs=1,
    max_consecutive_failed_dag_runs=settings.max_failed_runs,
    default_args=default_args(settings),
    params={
        "policy": Param(None, type=["null", "string"], enum=[None, *POLICIES],
                        description_md=choice_doc("policy", "ordering policy")),
        "refresh_policy": Param(None, type=["null", "string"], enum=[None, *REFRESH_POLICIES],
                                description_md=choice_doc("refresh_policy", "refresh policy")),
        "batch_size": Param(None, type=["null", "integer"], minimum=1, description="URLs in the next batch"),
        "per_host_cap": Param(None, type=["null", "integer"], minimum=1, description="most URLs per host"),
    },
    tags=["crawl"],
    doc_md=__doc__,
)
def crawl_cycle() -> None:
    @task
    def shard_task(name: str, shard: str) -> object:
        return _run(name, {"shard": shard})

    @task
    def db_task(name: str, cycle: int | None = None, shards: list[str] | None = None) -> object:
        context = get_current_context()
        start, end, run_id = run_interval(context)
        out = _run(name, {"start": start, "end": end, "run_id": run_id, "cycle": cycle, "shards": list(shards or [])})
        for asset in context["task"].outlets:  # the crawl state, updated by the cycle's last task
            context["outlet_events"][asset].extra = {"cycle": cycle, "interval_start": start.isoformat()}
        for line in out if TASKS[name].kind == GATE else ():
            print(line)
        return out

    # STAGE_ORDER in turn: a shard task is mapped over the shard folders, every other task gets the inputs it
    # takes from the tasks before it that gave them.
    given: dict[str, object] = {}
    tasks = []
    for t in STAGE_ORDER:
        if t.kind == SHARD:
            out = shard_task.override(task_id=t.name, **task_args(settings, t)).partial(name=t.name).expand(
                shard=given["shards"])
        else:
            out = db_task.override(task_id=t.name, **task_args(settings, t))(
                t.name, **{k: given[k] for k in t.takes if k in given})
        if t.gives:
            given[t.gives] = out
        tasks.append(out)
    chain(*tasks)
    if settings.missing_query_log == "wait":
        # the interval's query-log partition may land late: begin waits for it, giving the slot up between pokes
        @task.sensor(poke_interval=60, timeout=settings.query_log_wait, mode="reschedule")
        def query_log_partition() -> bool:
            from crawlcycle.ranking.query_log import partition_exists

            return partition_exists(_live("begin"), run_interval(get_current_context())[0])

        query_log_partition() >> tasks[0]


crawl_cycle()
