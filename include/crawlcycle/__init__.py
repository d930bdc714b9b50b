"""crawlcycle: crawl cycles ordered by search impact, orchestrated by Airflow, state in DuckDB."""

__version__ = "0.1.0"
