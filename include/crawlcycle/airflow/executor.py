"""LocalExecutor whose task processes start with ``crawlcycle.airflow.preload.PRELOAD`` already imported
(``[core] executor`` in airflow.cfg).

On Linux, Airflow 3's LocalExecutor forks its workers from the scheduler when it starts, and each worker forks one
process per task (``supervise``; no fresh interpreter: ``execute_tasks_new_python_interpreter`` is gone). A module
imported in the scheduler before the workers are forked is loaded in every task for free, while one imported inside
a task is lost when the task ends: Great Expectations took 3-4 s in each of a cycle's three gate tasks, and
scikit-learn 1-4 s in refit and in score. Importing them once here costs the scheduler those seconds once at start
and about 0.3 GB of memory, shared copy-on-write with the workers and tasks. What remains to import in a task
(polars, DuckDB, the stages) takes about 0.3 s.
"""

from __future__ import annotations

import logging

from airflow.executors.local_executor import LocalExecutor

from crawlcycle.airflow.preload import PRELOAD, preload

log = logging.getLogger(__name__)


class PreloadingLocalExecutor(LocalExecutor):
    """LocalExecutor that imports ``PRELOAD`` before it forks its workers."""

    def start(self) -> None:
        if self.is_mp_using_fork:  # spawned workers start a fresh interpreter: nothing to share
            seconds = preload()
            log.info("imported %s for the task processes in %.1f s", ", ".join(PRELOAD), seconds)
        super().start()
