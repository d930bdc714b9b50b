"""The tasks of one crawl cycle, in the order they run, and the one reading of that order: ``dags/crawl_cycle.py``
makes an Airflow task of each entry and ``stages.run_cycle`` runs them in turn, both through :meth:`Task.run`.
Kept light: the DAG parser imports it on every parse, so an entry names its function as ``"module:function"``,
imported only when the task runs.

A task's function takes the settings, then (a gate task) the names of its gates, then the inputs ``takes`` names:
the run's ``start``, ``end`` and ``run_id`` (its data interval and Airflow run), the ``cycle`` number begin gave,
the ``shards`` folders the task before gave, or one ``shard`` folder (a shard task: mapped over the folders).
What it returns becomes the input ``gives`` names for the tasks after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

DB = "db"  # opens the DuckDB file: runs alone, on the writer
SHARD = "shard"  # runs once per host shard (a mapped task), in parallel, and never opens the DuckDB file
GATE = "gate"  # a DB task running the quality gates it names, each after the stage of that name


@dataclass(frozen=True)
class Task:
    name: str
    kind: str
    function: str  # "module:function"
    takes: tuple[str, ...] = ("cycle",)
    gives: str = ""  # "cycle" or "shards": the input later tasks read from what this one returns
    gates: tuple[str, ...] = ()

    def run(self, settings: Any, inputs: dict[str, Any]) -> Any:
        """Call the task's function on ``settings`` and the ``inputs`` it takes."""
        module, _, name = self.function.partition(":")
        function = getattr(import_module(module), name)
        args = [inputs[k] for k in self.takes]
        return function(settings, self.gates, *args) if self.kind == GATE else function(settings, *args)


_STAGES = "crawlcycle.pipeline.stages"
STAGE_ORDER = (
    Task("begin", DB, f"{_STAGES}:begin", ("start", "end", "run_id"), gives="cycle"),
    Task("plan_shards", DB, f"{_STAGES}:plan_shards", gives="shards"),
    Task("fetch", SHARD, f"{_STAGES}:fetch", ("shard",), gives="shards"),
    Task("parse", SHARD, f"{_STAGES}:parse", ("shard",), gives="shards"),
    # fetch and parse gates in one task: a gate task pays the import of Great Expectations unless its executor
    # preloaded it, and the shards' output reaches the database only through update, after both gates
    Task("gate_shards", GATE, f"{_STAGES}:run_gates", ("cycle", "shards"), gates=("fetch", "parse")),
    Task("update", DB, f"{_STAGES}:update_tables", ("cycle", "shards")),
    Task("gate_update", GATE, f"{_STAGES}:run_gates", gates=("update",)),
    Task("refit", DB, f"{_STAGES}:refit_models"),
    Task("select_needy", DB, f"{_STAGES}:select_needy"),
    Task("score", DB, f"{_STAGES}:score"),
    Task("materialize", DB, f"{_STAGES}:materialize"),
    Task("gate_materialize", GATE, f"{_STAGES}:run_gates", gates=("materialize",)),
    Task("close", DB, f"{_STAGES}:close"),
)
TASKS = {t.name: t for t in STAGE_ORDER}
