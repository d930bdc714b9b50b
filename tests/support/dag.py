"""The crawl_cycle DAG as the tests expect it."""

# Every task that opens the DuckDB file: they run in the one-slot pool, on the writer queue.
DB_TASKS = {"begin", "plan_shards", "gate_shards", "update", "gate_update", "refit", "select_needy", "score",
            "materialize", "gate_materialize", "close"}
