"""The distributed deployment of docker/, built and run for real with podman: the images are built from
docker/Dockerfile and docker/services.Dockerfile on a Debian base made with debootstrap, docker-compose starts
docker/docker-compose.yml through podman's Docker-compatible socket, two demo cycles run under CeleryExecutor,
and then fetch and parse shards must have run on the general workers, every DuckDB task on the one writer
(never two at once), the crawl tables must hold both cycles, the Crawl page must answer a login and refuse a
caller without one, and nothing of the stack may outlive the test.

A second test resolves the compose file with the docker/.env that docs/howto/containers.md shows for a crawl of
the live web, and checks that every container gets those settings.

What can be kept between runs is kept under ``$XDG_CACHE_HOME/crawlcycle-containers`` (the Debian root file
system as a tarball) and in podman's own storage (the base image, the images and their layers), so a second run
builds nothing that did not change.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
import requests
import yaml

from crawlcycle.airflow.environment import DAG_ID
from crawlcycle.airflow.support import DUCKDB_POOL
from crawlcycle.devtools.airflow_stack import ADMIN, AirflowStack
from crawlcycle.devtools.celery_demo import GENERAL_WORKERS, WRITER, assignment, check_assignment
from crawlcycle.settings.sources import load_settings
from tests.support.dag import DB_TASKS
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "docker-compose.yml"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "crawlcycle-containers"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BASE_IMAGE = "localhost/crawlcycle-debian:bookworm"
AIRFLOW_IMAGE = "localhost/crawlcycle-airflow:test"
SERVICES_IMAGE = "localhost/crawlcycle-services:test"
# Fixed, so that a run cleans up what an interrupted one left (the compose file's subnet is fixed too).
PROJECT = "crawlcycle-stack-test"
CYCLES = ("2026-11-01", "2026-11-02")
# Long-running services (one or more containers each); the one-shot jobs are airflow-init and crawl-init.
LONG_RUNNING = {"postgres", "redis", "demo-web", "api-server", "scheduler", "dag-processor", "triggerer", "worker",
                "writer"}


def _say(t0: float, message: str) -> None:
    print(f"[container-stack {time.monotonic() - t0:5.0f}s] {message}", flush=True)


def _require(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        # .ci/run installs it: under CI a missing tool is a failure, not a skip
        (pytest.fail if os.environ.get("CI") else pytest.skip)(
            f"{tool} is not installed (apt-get install -y {package})")
    return path


def _env() -> dict[str, str]:
    """The environment of every podman command: the settings of docker/podman-containers.conf unless
    CONTAINERS_CONF names other ones."""
    return {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF")
            or str(DOCKER / "podman-containers.conf")}


def _run(args: list[str], timeout: float = 600, env: dict[str, str] | None = None,
         check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(args, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    if check and res.returncode:
        raise AssertionError(f"{' '.join(args[:6])} ... failed ({res.returncode}):\n{res.stdout[-3000:]}\n"
                             f"{res.stderr[-3000:]}")
    return res


def _podman(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    return _run(["podman", *args], timeout=timeout, check=check)


def _nice(args: list[str]) -> list[str]:
    # Builds share two cores with everything else: lowest priority.
    return ["nice", "-n", "19", *args]


def base_image(say: Callable[[str], None]) -> None:
    """A Debian bookworm image made with debootstrap; its root file system is kept as a tarball in CACHE."""
    if not _podman("image", "exists", BASE_IMAGE, check=False).returncode:
        say(f"{BASE_IMAGE} is in podman's storage")
        return
    tarball = CACHE / "debian-bookworm-minbase.tar"
    if not tarball.is_file():
        _require("debootstrap", "debootstrap")
        CACHE.mkdir(parents=True, exist_ok=True)
        rootfs = CACHE / "rootfs"
        shutil.rmtree(rootfs, ignore_errors=True)
        say(f"debootstrap bookworm from {DEBIAN_MIRROR}")
        _run(_nice(["debootstrap", "--variant=minbase", "bookworm", str(rootfs), DEBIAN_MIRROR]), timeout=900)
        for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for f in (rootfs / leftover).glob("*"):
                if f.is_file():
                    f.unlink()
        partial = tarball.with_suffix(".partial")
        _run(["tar", "-C", str(rootfs), "-cf", str(partial), "."])
        partial.rename(tarball)  # only a whole tarball counts as cached
        shutil.rmtree(rootfs)
    say(f"importing {tarball} as {BASE_IMAGE}")
    _podman("import", str(tarball), BASE_IMAGE)


def pip_options() -> list[str]:
    """Build options that give pip in the image the host's way to the package index: index URLs, trusted
    hosts and timeout as build arguments, a CA bundle (for a TLS-inspecting proxy) as the secret pip_cert.
    Host paths (find-links, file:// indexes, constraints) mean nothing in the image and are left out; proxy
    variables podman passes on by itself."""
    listed = _run([sys.executable, "-m", "pip", "config", "list"], check=False).stdout
    values: dict[str, str] = {}
    # Later sections win: global, then install, then the environment (as pip reads them).
    for section in ("global", "install", ":env:"):
        for line in listed.splitlines():
            key, _, value = line.partition("=")
            where, _, name = key.rpartition(".")
            if where == section:
                values[name] = value.strip().strip("'\"")
    options = []
    if values.get("index-url", "").startswith("http"):
        options += ["--build-arg", f"PIP_INDEX_URL={values['index-url']}"]
    extra = [u for u in values.get("extra-index-url", "").split() if u.startswith("http")]
    if extra:
        options += ["--build-arg", f"PIP_EXTRA_INDEX_URL={' '.join(extra)}"]
    if values.get("trusted-host"):
        options += ["--build-arg", f"PIP_TRUSTED_HOST={values['trusted-host']}"]
    timeout = values.get("default-timeout") or values.get("timeout")
    if timeout:
        options += ["--build-arg", f"PIP_DEFAULT_TIMEOUT={timeout}"]
    if values.get("cert") and Path(values["cert"]).is_file():
        options += ["--secret", f"id=pip_cert,src={values['cert']}"]
    return options


def build_images(say: Callable[[str], None]) -> None:
    common = ["build", "--format", "docker", "--build-arg", f"BASE_IMAGE={BASE_IMAGE}"]
    say(f"building {SERVICES_IMAGE}")
    _run(_nice(["podman", *common, "-f", str(DOCKER / "services.Dockerfile"), "-t", SERVICES_IMAGE, str(ROOT)]),
         timeout=1200)
    say(f"building {AIRFLOW_IMAGE}")
    _run(_nice(["podman", *common, *pip_options(), "-f", str(DOCKER / "Dockerfile"), "-t", AIRFLOW_IMAGE,
                str(ROOT)]), timeout=2400)


@contextlib.contextmanager
def docker_socket(folder: Path) -> Iterator[str]:
    """podman's Docker-compatible API on a socket of its own; yields its DOCKER_HOST."""
    sock = folder / "podman.sock"
    log = (folder / "podman-service.log").open("wb")
    proc = subprocess.Popen(["podman", "system", "service", "--time=0", f"unix://{sock}"], env=_env(),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"podman system service exited; see {log.name}"
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
                s.connect(str(sock))
                break
            assert time.monotonic() < deadline, f"podman system service did not listen; see {log.name}"
            time.sleep(0.2)
        yield f"unix://{sock}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


class HealthChecks(threading.Thread):
    """Runs the project's health checks at their intervals, as the container engine would. podman hands them to
    systemd timers; without systemd they never run on their own, and compose would wait forever for a
    dependency to be healthy."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stopping = threading.Event()
        self.due: dict[str, float] = {}

    def run(self) -> None:
        while not self.stopping.wait(2):
            now = time.monotonic()
            for cid in self._pending():
                if self.due.get(cid, 0) <= now:
                    _podman("healthcheck", "run", cid, check=False, timeout=60)
                    self.due[cid] = now + self._interval(cid)

    @staticmethod
    def _pending() -> list[str]:
        ids = []
        for state in ("starting", "unhealthy"):
            ids += _podman("ps", "-q", "--filter", f"label=com.docker.compose.project={PROJECT}", "--filter",
                           f"health={state}", check=False).stdout.split()
        return ids

    @staticmethod
    def _interval(cid: str) -> float:
        """The container's health check interval in seconds (podman's JSON gives nanoseconds)."""
        ns = _podman("inspect", "--format", "{{json .Config.Healthcheck.Interval}}", cid, check=False).stdout.strip()
        return int(ns) / 1e9 if ns.isdigit() and int(ns) else 30

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=90)


class Stack:
    """docker-compose on docker/docker-compose.yml, project PROJECT, the test's images, through ``host``."""

    def __init__(self, folder: Path, host: str, port: int) -> None:
        env_file = folder / "empty.env"  # a developer's docker/.env must not count
        env_file.write_text("")
        self.base = [_require("docker-compose", "docker-compose"), "-p", PROJECT, "-f", str(COMPOSE),
                     "--env-file", str(env_file)]
        self.port = port
        self.env = {"PATH": os.environ["PATH"], "DOCKER_HOST": host, "AIRFLOW_JWT_SECRET": secrets.token_hex(32),
                    "AIRFLOW_PORT": str(port), "CRAWLCYCLE_IMAGE": AIRFLOW_IMAGE, "POSTGRES_IMAGE": SERVICES_IMAGE,
                    "REDIS_IMAGE": SERVICES_IMAGE}

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        return _run([*self.base, *args], timeout=timeout, env=self.env, check=check)

    def containers(self) -> list[dict]:
        """Name, service, hostname, state and health of each container of the project."""
        ids = _podman("ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}").stdout.split()
        if not ids:
            return []
        fields = ("{{.Name}}\t{{index .Config.Labels \"com.docker.compose.service\"}}\t{{.Config.Hostname}}\t"
                  "{{.State.Status}}\t{{.State.ExitCode}}")
        rows = [line.split("\t") for line in _podman("inspect", "--format", fields, *ids).stdout.splitlines()]
        return [{"name": n, "service": s, "hostname": h, "state": st, "exit_code": int(c)} for n, s, h, st, c in rows]

    def leftovers(self) -> list[str]:
        label = f"label=com.docker.compose.project={PROJECT}"
        return [*_podman("ps", "-aq", "--filter", label).stdout.split(),
                *_podman("volume", "ls", "-q", "--filter", label).stdout.split(),
                *_podman("network", "ls", "-q", "--filter", label).stdout.split()]


def wait_healthy(stack: Stack, timeout: float) -> list[dict]:
    """Wait until every long-running container is running and healthy; fail at once if one exited."""
    deadline = time.monotonic() + timeout
    while True:
        containers = [c for c in stack.containers() if c["service"] in LONG_RUNNING]
        for c in containers:
            assert c["state"] == "running", f"{c['name']} is {c['state']} (exit code {c['exit_code']})"
        unhealthy = [c["name"] for c in containers
                     if _podman("healthcheck", "run", c["name"], check=False, timeout=60).returncode]
        if containers and not unhealthy:
            return containers
        assert time.monotonic() < deadline, f"not healthy after {timeout:.0f}s: {unhealthy}"
        time.sleep(5)


def _dag_known(airflow: AirflowStack) -> bool:
    try:
        airflow.api("GET", f"/dags/{DAG_ID}")
        return True
    except requests.HTTPError:
        return False


# Run in the writer container, the only one that mounts the crawl database: the cycles and the rows of each.
CRAWL_STATE = """
import json
from crawlcycle.db import connect
from crawlcycle.settings.sources import load_settings
with connect(load_settings(), read_only=True) as con:
    q = lambda sql: con.execute(sql).fetchall()
    print(json.dumps({
        "cycles": q("SELECT cycle, run_id, status, fetched FROM cycles ORDER BY cycle"),
        "batch_urls": dict(q("SELECT fetch_cycle, count(*) FROM batches GROUP BY fetch_cycle")),
        "fetch_log": dict(q("SELECT cycle, count(*) FROM fetch_log GROUP BY cycle")),
        "pages": q("SELECT count(*) FROM pages")[0][0],
    }, default=str))
"""


@pytest.mark.services
@pytest.mark.timeout(3000)
def test_compose_stack_crawls_with_celery_workers_and_one_writer(tmp_path: Path) -> None:
    t0 = time.monotonic()
    say = lambda m: _say(t0, m)  # noqa: E731
    _require("podman", "podman runc netavark aardvark-dns")
    _require("docker-compose", "docker-compose")
    if os.geteuid():
        (pytest.fail if os.environ.get("CI") else pytest.skip)("needs root: rootful podman, debootstrap")
    base_image(say)
    build_images(say)
    say("images built")
    port = free_port()
    health = HealthChecks()
    with docker_socket(tmp_path) as host:
        stack = Stack(tmp_path, host, port)
        stack.compose("down", "-v", "--remove-orphans", timeout=300)  # what an interrupted run left
        health.start()
        try:
            say(f"docker-compose up; the UI on 127.0.0.1:{port}")
            up = stack.compose("up", "-d", "--no-build", timeout=900, check=False)
            assert up.returncode == 0, f"up failed:\n{up.stderr[-3000:]}\n{_logs(stack, tmp_path)}"
            containers = wait_healthy(stack, timeout=300)
            say(f"{len(containers)} containers healthy")
            _check_stack(stack, containers, tmp_path, say)
        finally:
            _logs(stack, tmp_path)
            health.stop()
            stack.compose("down", "-v", "--remove-orphans", "--timeout", "30", timeout=300)
            say("stack removed")
        assert stack.leftovers() == [], "containers, volumes or networks of the stack outlived docker-compose down"


def _logs(stack: Stack, folder: Path) -> str:
    """Every container's log into a file; its path, for failure messages."""
    out = folder / "compose.log"
    res = stack.compose("logs", "--no-color", "--timestamps", timeout=120, check=False)
    out.write_text(res.stdout + res.stderr)
    return f"container logs: {out}"


def _check_stack(stack: Stack, containers: list[dict], folder: Path, say: Callable[[str], None]) -> None:
    logs = _logs(stack, folder)
    # The one-shot jobs: Airflow's schema and pool, then `crawlcycle init` on the demo web's seeds.
    jobs = {c["service"]: c for c in stack.containers() if c["service"] in ("airflow-init", "crawl-init")}
    assert {s: c["exit_code"] for s, c in jobs.items()} == {"airflow-init": 0, "crawl-init": 0}, logs
    init_log = stack.compose("logs", "--no-color", "crawl-init").stdout
    assert "database ready:" in init_log and "seed URLs admitted" in init_log, init_log[-2000:]
    workers = sorted((c for c in containers if c["service"] == "worker"), key=lambda c: c["name"])
    (writer,) = [c for c in containers if c["service"] == "writer"]
    assert len(workers) == len(GENERAL_WORKERS)
    # Task instances record the container's hostname; name them as the Celery demo names its workers.
    names = {**{c["hostname"]: name for c, name in zip(workers, GENERAL_WORKERS, strict=True)},
             writer["hostname"]: WRITER}

    # A client of the deployment's API (it starts nothing): runs, task instances, pools.
    airflow = AirflowStack(folder / "airflow-client", port=stack.port, log=say)
    deadline = time.monotonic() + 300
    while not _dag_known(airflow):  # the DAG processor parses the DAG folder every 30 s
        assert time.monotonic() < deadline, f"{DAG_ID} not parsed after 300 s; {logs}"
        time.sleep(3)
    # The commands docs/howto/containers.md shows, as a user runs them.
    stack.compose("exec", "-T", "scheduler", "airflow", "dags", "unpause", DAG_ID)
    stack.compose("exec", "-T", "scheduler", "airflow", "backfill", "create", "--dag-id", DAG_ID,
                  "--from-date", CYCLES[0], "--to-date", CYCLES[-1], "--max-active-runs", "1")
    say(f"backfill {CYCLES[0]} .. {CYCLES[-1]} created")
    try:
        runs = airflow.wait_for_runs(len(CYCLES), timeout=600 * len(CYCLES))
    except (RuntimeError, TimeoutError) as e:
        raise AssertionError(f"{e}; {_logs(stack, folder)}") from e
    say("every run succeeded")

    # Which worker ran what: fetch and parse on the general workers (both of them), every DuckDB task on the
    # writer through the writer queue.
    rows = [{**r, "worker": names.get(r["worker"], r["worker"])} for r in assignment(airflow, runs)]
    writer_queue = load_settings(ROOT / "crawlcycle.toml", environ={}).writer_queue
    assert check_assignment(rows, writer_queue) == [], rows
    assert {r["task"] for r in rows if r["worker"] == WRITER} == set(DB_TASKS)
    assert len([r for r in rows if r["task"] in DB_TASKS]) == len(CYCLES) * len(DB_TASKS)
    # The writer's one slot: no two DuckDB tasks ran at once, in the order their start and end times give.
    db_tis = sorted(((datetime.fromisoformat(ti["start_date"]), datetime.fromisoformat(ti["end_date"]), ti["task_id"])
                     for run in runs for ti in airflow.task_instances(run["dag_run_id"])
                     if ti["task_id"] in DB_TASKS), key=lambda t: t[0])
    overlaps = [(a[2], b[2]) for a, b in itertools.pairwise(db_tis) if b[0] < a[1]]
    assert overlaps == [], f"DuckDB tasks ran at once: {overlaps}"
    pool = airflow.api("GET", f"/pools/{DUCKDB_POOL}")
    assert pool["slots"] == 1

    # The crawl tables hold both cycles, each run's batch fetched whole, and the next batch.
    state = json.loads(stack.compose("exec", "-T", "writer", "python", "-c", CRAWL_STATE).stdout.splitlines()[-1])
    run_ids = [r["dag_run_id"] for r in sorted(runs, key=lambda r: r["logical_date"])]
    assert [(c[0], c[1], c[2]) for c in state["cycles"]] == [(i + 1, run_ids[i], "done") for i in range(len(CYCLES))]
    assert all(c[3] > 0 for c in state["cycles"]), state
    for cycle in range(1, len(CYCLES) + 1):
        assert state["fetch_log"][str(cycle)] == state["batch_urls"][str(cycle)] > 0, state
    assert state["batch_urls"].get(str(len(CYCLES) + 1), 0) > 0, state
    assert state["pages"] == sum(c[3] for c in state["cycles"]), state
    say(f"crawl state: {state}")

    # The Crawl page: a caller without a login is refused (a browser is sent to the login page), a logged-in one
    # sees both cycles.
    page = f"http://127.0.0.1:{stack.port}/crawl/"
    assert requests.get(page, timeout=30).status_code == 401
    r = requests.get(page, headers={"Accept": "text/html"}, allow_redirects=False, timeout=30)
    assert r.status_code == 303 and "/auth/login" in r.headers["location"]
    login = f"http://127.0.0.1:{stack.port}/auth/token"
    assert requests.post(login, json={"username": ADMIN[0], "password": "wrong"}, timeout=30).status_code == 401
    token = requests.post(login, json={"username": ADMIN[0], "password": ADMIN[1]}, timeout=30).json()["access_token"]
    r = requests.get(page, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200 and '<table id="cycles">' in r.text
    for cycle in range(1, len(CYCLES) + 1):
        assert f'<tr data-key="{cycle}"><td data-col="cycle" class="n">{cycle}</td>' in r.text
    # Still healthy after the crawl: every check of docker/healthcheck.py and the services image passes.
    wait_healthy(stack, timeout=120)


def test_the_live_web_env_file_of_the_docs_reaches_every_container(tmp_path: Path) -> None:
    """The docker/.env that docs/howto/containers.md shows for a crawl of the live web, resolved by
    `docker-compose config`: every container that runs crawl code gets the crawler's name, the scope, the polite
    delays and the shard storage, routes nothing to the demo web, and the writer reads the host's input folder."""
    compose = _require("docker-compose", "docker-compose")
    page = (ROOT / "docs" / "howto" / "containers.md").read_text()
    section = page[page.index("## Point it at the live web"):]
    block = section[section.index("```dotenv\n") + len("```dotenv\n"):]
    lines = block[:block.index("```")].splitlines()
    variables = dict(line.split("=", 1) for line in lines)
    env_file = tmp_path / "live.env"
    env_file.write_text("\n".join([*lines, "AIRFLOW_JWT_SECRET=x", ""]))
    res = subprocess.run([compose, "-f", str(COMPOSE), "--env-file", str(env_file), "config"],
                         env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    services = yaml.safe_load(res.stdout)["services"]
    crawling = {n: s for n, s in services.items() if s.get("build", {}).get("dockerfile") == "docker/Dockerfile"
                and n != "demo-web"}
    assert {"crawl-init", "scheduler", "worker", "writer"} <= set(crawling)
    for name, service in crawling.items():
        settings = load_settings(environ={k: str(v) for k, v in service["environment"].items()})
        assert settings.user_agent == variables["CRAWLCYCLE_USER_AGENT"], name
        assert settings.robots_token == "examplebot" and settings.allowed_domains == "example.org", name
        assert settings.connect_to == "" and settings.allow_networks == "", name
        assert settings.connect_target("apple.demo.test") is None, name
        assert (settings.min_delay, settings.max_delay, settings.delay_factor) == (1.0, 30.0, 2.0), name
        assert settings.end_date == "" and settings.shard_storage == "s3://example-crawl/shards", name
    for name in ("writer", "crawl-init"):
        # docker-compose 1.29 prints a volume as SOURCE:TARGET[:MODE]
        mounts = [v.split(":") for v in services[name]["volumes"]]
        assert ["/srv/crawl-input", "/opt/crawl/demo-web", "ro"] in mounts, mounts
        assert Path(load_settings(environ={k: str(v) for k, v in services[name]["environment"].items()})
                    .seeds_file).parent == Path("/opt/crawl/demo-web")
