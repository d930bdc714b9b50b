#!/bin/sh
# Entry point of the crawlcycle image: Airflow's components are named as in the official Airflow image
# (`scheduler`, `celery worker ...`), run as `airflow <args>`; any other command runs as given.
set -eu
case "${1:-}" in
api-server | scheduler | dag-processor | triggerer | celery | db | pools | dags | tasks | backfill | jobs | version)
    exec airflow "$@"
    ;;
*)
    exec "$@"
    ;;
esac
