"""Not the product: the demo web, the WARC server, the local Airflow stack and the Celery demo."""
