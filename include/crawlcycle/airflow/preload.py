"""What a process that forks Airflow's task processes imports first, so that every task finds it loaded: Airflow's
task runner and SDK, the DAG file's own imports, Great Expectations (3-4 s a gate task) and what the fits import
(scikit-learn, SciPy: 1-4 s in refit and in score). The LocalExecutor imports it in the scheduler before it forks
its workers (``crawlcycle.airflow.executor``), a Celery worker in its main process before its pool forks
(``crawlcycle.airflow.celery_config``).

Polars is left out on purpose: it starts its thread pool at import, and a child forked from a process with a
thread pool can deadlock in it (polars' own advice: do not fork after importing it). scikit-learn starts no
thread at import; the threads numpy's OpenBLAS starts are made again in a forked child (its fork handlers).
"""

from __future__ import annotations

import importlib
import logging
import time

from crawlcycle.models import FIT_MODULES

PRELOAD = ("airflow.sdk", "airflow.sdk.execution_time.task_runner", "crawlcycle.airflow.support",
           "great_expectations", *FIT_MODULES)


def preload() -> float:
    """Import ``PRELOAD``; return the seconds it took."""
    t0 = time.perf_counter()
    # GX logs a line per API it registers at import; the parent's log need not hold them.
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    for name in PRELOAD:
        importlib.import_module(name)
    return time.perf_counter() - t0
