"""crawl_cycle: one DAG run is one crawl cycle. Wiring only: the tasks and their order are
crawlcycle.pipeline.stage_order.STAGE_ORDER, the stages live in crawlcycle.pipeline.stages.

fetch and parse are mapped over the host shards; every other task opens the DuckDB file and runs alone. A gate
task pays the import of Great Expectations unless its executor preloaded it (crawlcycle.airflow.executor does,
for LocalExecutor).

A cycle runs with the settings its begin resolved (the settings file, the environment, this run's parameters),
recorded in cycles.settings and handed on to the later tasks (XCom BEGUN): none of them, nor a retry, reads the
settings file, so an edit of it, or a file made invalid, applies from the next cycle. What this file reads when the
scheduler parses it (schedule, dates, retries, timeouts, the writer queue, the query-log sensor of missing_query_log
= wait) is read as it stands, and so are the machine's settings (where the state is, threads, memory) that the
environment of the machine running a task gives: crawlcycle.settings.LIVE. While the settings file cannot be read,
this file is parsed on the defaults and the environment, and no run is scheduled.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, chain, dag, get_current_context, task

from crawlcycle.airflow.support import (
    BEGUN,
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

settings, unreadable = dag_settings()


def _live(task_name: str) -> object:
    """The settings as they stand for a task, the run's parameters and the task's own overrides on top: begin (and
    the sensor before it) reads the settings file; a later task starts from what begin handed on, the file unread."""
    from crawlcycle.pipeline.stages import run_settings

    context = get_current_context()
    begun = None if task_name == "begin" else context["ti"].xcom_pull(task_ids="begin", key=BEGUN)
    return run_settings({**context["params"], **TASK_OVERRIDES.get(task_name, {})}, begun)


def _run(task_name: str, inputs: dict[str, object]) -> object:
    """Run a task of the cycle with the settings begin recorded (begin: with those as they stand, handed on)."""
    from crawlcycle.pipeline.stages import run_task

    live = _live(task_name)
    out = run_task(TASKS[task_name], live, inputs)
    if task_name == "begin":
        get_current_context()["ti"].xcom_push(key=BEGUN, value=live.record())
    return out


@dag(
    dag_id="crawl_cycle",
    schedule=None if unreadable else settings.schedule,
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
    doc_md=f"**Not scheduled**: {unreadable}\n\n{__doc__}" if unreadable else __doc__,
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
