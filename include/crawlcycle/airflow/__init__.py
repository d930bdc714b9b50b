"""What Airflow loads from the package: DAG support, the preloading executor, task overhead."""
