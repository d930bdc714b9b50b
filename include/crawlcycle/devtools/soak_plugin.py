"""The Airflow plugin of the soak run (``crawlcycle.devtools.soak_run``): a listener that, in the task process of a
task instance the soak's plan names, arms fault_run's kill switch before the task runs. The soak links this file
into the plugins folder of its own Airflow, beside the project's; no other Airflow loads it."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from crawlcycle.devtools import soak_run


class SoakKills(AirflowPlugin):
    name = "crawlcycle_soak_kills"
    listeners = [soak_run.TaskKills()]
