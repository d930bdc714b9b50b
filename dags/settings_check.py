"""settings_check: no DAG. While the crawl's settings file cannot be read, this file fails to import with the
reason (the file, the setting, what is wrong with it), so that Airflow's UI shows it in its banner of DAG import
errors and `airflow dags list-import-errors` lists it. crawl_cycle itself still parses, on the defaults and the
environment, and schedules nothing meanwhile; a cycle already running finishes on the settings its begin recorded.
"""

from __future__ import annotations

from crawlcycle.airflow.support import dag_settings
from crawlcycle.settings import SettingsError

_, unreadable = dag_settings()
if unreadable:
    raise SettingsError(f"{unreadable}; crawl_cycle schedules no run until it is mended")
