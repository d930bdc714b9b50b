"""The tasks of one crawl cycle, in the order they run: ``dags/crawl_cycle.py`` wires them so and
``stages.run_cycle`` calls them so. Kept light: the DAG parser imports it on every parse.

begin opens the cycle and gives its number, plan_shards gives the shard folders; every later task takes the cycle
number, and those marked ``shards`` the shard folders too.
"""

from __future__ import annotations

from dataclasses import dataclass

DB = "db"  # opens the DuckDB file: runs alone, on the writer
SHARD = "shard"  # runs once per host shard (a mapped task), in parallel, and never opens the DuckDB file
GATE = "gate"  # a DB task running the quality gates it names, each after the stage of that name


@dataclass(frozen=True)
class Task:
    name: str
    kind: str
    gates: tuple[str, ...] = ()
    shards: bool = False  # reads the shard folders the SHARD tasks wrote


STAGE_ORDER = (
    Task("begin", DB),
    Task("plan_shards", DB),
    Task("fetch", SHARD),
    Task("parse", SHARD),
    # fetch and parse gates in one task: a gate task pays the import of Great Expectations unless its executor
    # preloaded it, and the shards' output reaches the database only through update, after both gates
    Task("gate_shards", GATE, ("fetch", "parse"), shards=True),
    Task("update", DB, shards=True),
    Task("gate_update", GATE, ("update",)),
    Task("refit", DB),
    Task("select_needy", DB),
    Task("score", DB),
    Task("materialize", DB),
    Task("gate_materialize", GATE, ("materialize",)),
    Task("close", DB),
)
