"""export_pages: an example of a DAG downstream of the crawl. It is scheduled on the crawl-state asset that
crawl_cycle's last task updates, so it runs after every cycle and writes the pages that cycle stored to
``<data_dir>/exports/pages-cycle-<N>.parquet``. Paused when it first appears (as every new DAG here); unpause it
to use it, or copy it as the start of an indexer of your own.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag, get_current_context, task

from crawlcycle.airflow.support import DUCKDB_POOL, crawl_state, dag_settings

settings, unreadable = dag_settings()


# while the settings file cannot be read, the asset of the defaults' database is not the crawl's: nothing is scheduled
@dag(dag_id="export_pages", schedule=None if unreadable else [crawl_state(settings)],
     start_date=pendulum.datetime(2026, 1, 1), catchup=False, tags=["crawl", "example"], doc_md=__doc__)
def export_pages() -> None:
    # opens the DuckDB file (read-only): in the crawl's one-slot pool, on the writer
    @task(pool=DUCKDB_POOL, queue=settings.writer_queue)
    def export() -> list[str]:
        from crawlcycle.pipeline.export import export_pages as write
        from crawlcycle.pipeline.stages import run_settings

        # every cycle closed since the last run (the scheduler may gather several events into one run)
        events = get_current_context()["triggering_asset_events"][crawl_state(settings)]
        return [str(write(run_settings(), event.extra["cycle"])) for event in events]

    export()


export_pages()
