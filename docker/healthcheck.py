"""The image's health check: finds which role this container plays from its command and checks that role.

``healthcheck.py PORT`` checks only that something accepts connections on 127.0.0.1:PORT (the demo web).
Without an argument:

- ``airflow api-server``: ``/api/v2/version`` answers.
- ``airflow scheduler``: its health server (``[scheduler] enable_health_check``) answers ``/health``.
- ``airflow celery worker``: the worker answers a Celery ping through the broker.
- ``airflow dag-processor``, ``airflow triggerer``: the job's heartbeat in the metadata database is recent.
- anything else (a one-shot command, the demo web): healthy while it runs.

Each check imports little (no Airflow), so a check every 30 s costs a fraction of a second of CPU. Exit status 0
means healthy; otherwise one line on stderr says why.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

# A job whose last heartbeat is older than this is taken as dead (Airflow's own thresholds are 30-60 s).
HEARTBEAT_LIMIT = timedelta(seconds=90)


def command(pid: int = 1) -> list[str]:
    """The container's command: the arguments of its first process without the image's entry point (dumb-init,
    docker/entrypoint.sh), a shell's -c string split into words. The role it names holds while the container
    lives, whatever its processes do meanwhile."""
    args = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    while args and Path(args[0]).name in ("dumb-init", "--", "entrypoint.sh"):
        args = args[1:]
    if len(args) >= 3 and Path(args[0]).name in ("bash", "sh") and args[1] == "-c":
        args = shlex.split(args[2])
    return args


def option(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def role(args: list[str]) -> str:
    """The Airflow component that ``args`` start (``airflow scheduler``, or ``scheduler`` as the entry point
    accepts it), or "other"."""
    words = [Path(a).name for a in args]
    sub = words[words.index("airflow") + 1:] if "airflow" in words else words
    if sub[:2] == ["celery", "worker"]:
        return "worker"
    if sub[:1] and sub[0] in ("api-server", "scheduler", "dag-processor", "triggerer"):
        return sub[0]
    return "other"


def http_ok(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as r:
        if r.status != 200:
            raise RuntimeError(f"{url} answered {r.status}")


def ping_worker(args: list[str]) -> None:
    from celery import Celery

    name = (option(args, "--celery-hostname") or "celery@%h").replace("%h", socket.gethostname())
    app = Celery(broker=os.environ["AIRFLOW__CELERY__BROKER_URL"])
    if not app.control.ping(destination=[name], timeout=5):
        raise RuntimeError(f"worker {name} did not answer a ping")


def job_alive(job_type: str) -> None:
    import sqlalchemy

    # The hostnames this container's jobs may be recorded under (crawlcycle's worker_name, or the default fqdn).
    names = {socket.getfqdn(), socket.gethostname(), os.environ.get("CELERY_WORKER_NAME") or socket.getfqdn()}
    engine = sqlalchemy.create_engine(os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    query = sqlalchemy.text("SELECT max(latest_heartbeat) FROM job WHERE job_type = :t AND state = 'running' "
                            "AND hostname IN :names").bindparams(sqlalchemy.bindparam("names", expanding=True))
    with engine.connect() as con:
        beat = con.execute(query, {"t": job_type, "names": sorted(names)}).scalar()
    if beat is None:
        raise RuntimeError(f"no running {job_type} of {sorted(names)}")
    if beat.tzinfo is None:
        beat = beat.replace(tzinfo=UTC)
    if datetime.now(UTC) - beat > HEARTBEAT_LIMIT:
        raise RuntimeError(f"{job_type} last heartbeat at {beat:%H:%M:%S}")


def check(argv: list[str]) -> str:
    if argv:
        socket.create_connection(("127.0.0.1", int(argv[0])), timeout=5).close()
        return f"port {argv[0]}"
    args = command()
    kind = role(args)
    if kind == "api-server":
        port = option(args, "--port") or os.environ.get("AIRFLOW__API__PORT", "8080")
        http_ok(f"http://127.0.0.1:{port}/api/v2/version")
    elif kind == "scheduler":
        port = os.environ.get("AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT", "8974")
        http_ok(f"http://127.0.0.1:{port}/health")
    elif kind == "worker":
        ping_worker(args)
    elif kind == "dag-processor":
        job_alive("DagProcessorJob")
    elif kind == "triggerer":
        job_alive("TriggererJob")
    return kind


def main() -> int:
    try:
        print(f"{check(sys.argv[1:])}: healthy")
        return 0
    except Exception as e:  # noqa: BLE001 - any failure is an unhealthy container, said in one line
        print(f"unhealthy: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
