"""The Celery settings of the crawl's workers (``[celery] celery_config_options`` in airflow.cfg): Airflow's own,
and Celery's ``imports``, the modules a worker's main process imports at start, before its prefork pool forks the
processes that fork the tasks (``crawlcycle.airflow.preload``). Without it each gate task imported GX again."""

from __future__ import annotations

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG

from crawlcycle.airflow.preload import PRELOAD

CELERY_CONFIG = {**DEFAULT_CELERY_CONFIG, "imports": PRELOAD}
