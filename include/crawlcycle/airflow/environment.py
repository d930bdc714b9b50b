"""The environment of every Airflow process of this project: where its home, configuration, DAGs and plugins are.

Airflow runs from a checkout of the project: ``airflow.cfg``, ``dags/`` and ``plugins/`` sit at its root, beside
``include/``, and are not part of the installed package.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DAG_ID = "crawl_cycle"
CONN_ENV = "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"


def airflow_home(config: Path | None) -> Path:
    """Airflow's home for a crawl: ``.airflow`` beside its settings file, so each crawl has its own metadata database
    and runs (the demo's crawlcycle.toml at the root: the root's ``.airflow``)."""
    return (config.parent if config else ROOT) / ".airflow"


def airflow_env(home: Path, port: int = 8080, config: Path | None = None) -> dict[str, str]:
    """Environment for every Airflow process of this project (absolute paths; airflow.cfg has the rest)."""
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW_CONFIG": str(ROOT / "airflow.cfg"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        CONN_ENV: f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        # every airflow command warns that graphviz (for `airflow dags show`, not used here) is missing
        "PYTHONWARNINGS": "ignore:Could not import graphviz:UserWarning",
    }
    if config:
        env["CRAWLCYCLE_CONFIG"] = str(config)
    return env
