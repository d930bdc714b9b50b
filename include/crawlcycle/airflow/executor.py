"""LocalExecutor whose task processes start with Airflow's task runner, Great Expectations and the models' fit
libraries already imported (``[core] executor`` in airflow.cfg).

On Linux, Airflow 3's LocalExecutor forks its workers from the scheduler when it starts, and each worker forks one
process per task (``supervise``; no fresh interpreter: ``execute_tasks_new_python_interpreter`` is gone). A module
imported in the scheduler before the workers are forked is loaded in every task for free, while one imported inside
a task is lost when the task ends: Great Expectations (with pandas, numpy, pyarrow) took 3-4 s in each of a
cycle's three gate tasks, and scikit-learn 1-4 s in refit and in score, the first stage of each process that fits
or loads a model. Importing them once here costs the scheduler those seconds once at start and about 0.3 GB of
memory, shared copy-on-write with the workers and tasks. scikit-learn starts no thread at import; the threads
numpy's OpenBLAS starts are re-made in a forked child (its fork handlers).

Polars is left out on purpose: it starts its thread pool at import, and a child forked from a process with a
thread pool can deadlock in it (polars' own advice: do not fork after importing it). What remains to import in a
task (polars, DuckDB, the stages) takes about 0.3 s.
"""

from __future__ import annotations

import importlib
import logging
import time

from airflow.executors.local_executor import LocalExecutor

from crawlcycle.models import FIT_MODULES

# Imported once by the scheduler, for every task: Airflow's task runner and SDK, the DAG file's own imports, GX and
# what the fits import.
PRELOAD = ("airflow.sdk", "airflow.sdk.execution_time.task_runner", "crawlcycle.airflow.support",
           "great_expectations", *FIT_MODULES)

log = logging.getLogger(__name__)


class PreloadingLocalExecutor(LocalExecutor):
    """LocalExecutor that imports ``PRELOAD`` before it forks its workers."""

    def start(self) -> None:
        if self.is_mp_using_fork:  # spawned workers start a fresh interpreter: nothing to share
            t0 = time.perf_counter()
            # GX logs a line per API it registers at import; the scheduler's log need not hold them.
            logging.getLogger("great_expectations").setLevel(logging.WARNING)
            for name in PRELOAD:
                importlib.import_module(name)
            log.info("imported %s for the task processes in %.1f s", ", ".join(PRELOAD), time.perf_counter() - t0)
        super().start()
