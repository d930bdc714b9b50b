"""The distributed deployment in docker/: the compose file as docker-compose resolves it (`docker-compose
config` needs no Docker daemon), the image's Dockerfile, and the demo web's container entry point."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import requests
import yaml

from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker" / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
LOCK = ROOT / "requirements-celery.lock"  # what the image installs: the base set and scale-out
SECRET = "test-jwt-secret"
# What every Airflow component must agree on to be one deployment.
SHARED_AIRFLOW = ("AIRFLOW__CORE__EXECUTOR", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CELERY__BROKER_URL",
                  "AIRFLOW__CELERY__RESULT_BACKEND", "AIRFLOW__API_AUTH__JWT_SECRET",
                  "AIRFLOW__CORE__EXECUTION_API_SERVER_URL")


def compose_config(env_dir: Path, **variables: str) -> subprocess.CompletedProcess:
    """`docker-compose config` with only ``variables`` set (an empty env file, so a local docker/.env
    does not count)."""
    binary = shutil.which("docker-compose")
    if binary is None:
        # .ci/run installs it: under CI a missing binary is a failure, not a skip
        (pytest.fail if os.environ.get("CI") else pytest.skip)("docker-compose is not installed")
    env_file = env_dir / "empty.env"
    env_file.write_text("")
    return subprocess.run([binary, "-f", str(COMPOSE), "--env-file", str(env_file), "config"], cwd=ROOT,
                          env={"PATH": os.environ["PATH"], **variables}, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    res = compose_config(tmp_path_factory.mktemp("compose"), AIRFLOW_JWT_SECRET=SECRET)
    assert res.returncode == 0, res.stderr
    return yaml.safe_load(res.stdout)["services"]


def image_services(services: dict[str, dict]) -> dict[str, dict]:
    """Services that run the project's image."""
    return {name: s for name, s in services.items() if s.get("build", {}).get("dockerfile") == "docker/Dockerfile"}


def env(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in service.get("environment", {}).items()}


def settings_of(service: dict) -> Settings:
    return load_settings(environ=env(service))


def queues(service: dict) -> list[str] | None:
    """Queues of a Celery worker service; None for any other service."""
    command = service.get("command") or []
    if command[:2] != ["celery", "worker"]:
        return None
    return command[command.index("--queues") + 1].split(",") if "--queues" in command else ["default"]


def replicas(service: dict) -> int:
    return int(service.get("scale", service.get("deploy", {}).get("replicas", 1)))


def mounts(service: dict) -> dict[str, tuple[str, bool]]:
    """target -> (source, read_only) of the service's volumes, in either output form of `config`."""
    out = {}
    for v in service.get("volumes", []):
        if isinstance(v, str):
            source, target, *mode = v.split(":")
            out[target] = (source, "ro" in mode)
        else:
            out[v["target"]] = (v.get("source", ""), bool(v.get("read_only")))
    return out


def workers(services: dict[str, dict]) -> dict[str, dict]:
    return {name: s for name, s in services.items() if queues(s) is not None}


def test_services_of_the_deployment(services: dict[str, dict]) -> None:
    for name in ("postgres", "redis", "airflow-init", "scheduler", "api-server", "dag-processor", "triggerer",
                 "worker", "writer", "demo-web", "crawl-init"):
        assert name in services, f"service {name} missing"
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    for name, command in (("scheduler", ["scheduler"]), ("dag-processor", ["dag-processor"]),
                          ("triggerer", ["triggerer"])):
        assert services[name]["command"] == command
    assert "exec airflow api-server" in services["api-server"]["command"][-1]
    init = " ".join(services["airflow-init"]["command"])
    assert "airflow db migrate" in init and "airflow pools set crawl_duckdb 1" in init


def test_exactly_one_writer_with_concurrency_one(services: dict[str, dict]) -> None:
    queue = {settings_of(s).writer_queue for s in image_services(services).values()}
    assert queue == {"crawl_writer"}
    writers = {n: s for n, s in workers(services).items() if "crawl_writer" in queues(s)}
    assert list(writers) == ["writer"]
    writer = writers["writer"]
    assert replicas(writer) == 1
    command = writer["command"]
    assert command[command.index("--concurrency") + 1] == "1"
    # Its one slot is never taken by a fetch: it serves the writer queue only.
    assert queues(writer) == ["crawl_writer"]


def test_general_workers_consume_default(services: dict[str, dict]) -> None:
    general = {n: s for n, s in workers(services).items() if n != "writer"}
    assert general, "no general worker"
    for name, s in general.items():
        assert queues(s) == ["default"], f"{name} consumes {queues(s)}"
    assert sum(replicas(s) for s in general.values()) >= 2


def test_airflow_components_share_one_configuration(services: dict[str, dict]) -> None:
    airflow = image_services(services)
    assert {"scheduler", "api-server", "dag-processor", "triggerer", "worker", "writer"} <= set(airflow)
    for key in SHARED_AIRFLOW:
        values = {name: env(s).get(key) for name, s in airflow.items()}
        assert len(set(values.values())) == 1, f"{key} differs: {values}"
    shared = env(airflow["scheduler"])
    assert shared["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert shared["AIRFLOW__API_AUTH__JWT_SECRET"] == SECRET

    def service_at(url: str) -> str:
        host = urlsplit(url).hostname
        assert host in services, f"{url} names no service"
        return host

    assert shared["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
    assert shared["AIRFLOW__CELERY__RESULT_BACKEND"].startswith("db+postgresql+psycopg2://")
    for key in ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "AIRFLOW__CELERY__RESULT_BACKEND"):
        assert services[service_at(shared[key])]["image"].startswith("postgres:")
    assert shared["AIRFLOW__CELERY__BROKER_URL"].startswith("redis://")
    assert services[service_at(shared["AIRFLOW__CELERY__BROKER_URL"])]["image"].startswith("redis:")
    execution_api = urlsplit(shared["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert service_at(execution_api.geturl()) == "api-server"
    assert execution_api.path == "/execution/"
    assert f"--port {execution_api.port}" in services["api-server"]["command"][-1]


def test_jwt_secret_must_be_set(tmp_path: Path) -> None:
    res = compose_config(tmp_path)
    assert res.returncode != 0
    assert "AIRFLOW_JWT_SECRET" in res.stderr


def test_compose_settings_are_valid(services: dict[str, dict]) -> None:
    """Every CRAWLCYCLE_* variable is a real setting with a valid value, in every container."""
    for name, s in image_services(services).items():
        settings = settings_of(s)
        assert Path(settings.db_path).is_absolute(), name


def test_shard_volume_on_every_worker(services: dict[str, dict]) -> None:
    storage = {settings_of(s).shard_storage for s in image_services(services).values()}
    assert len(storage) == 1
    url = urlsplit(storage.pop())
    assert url.scheme == "file"
    sources = set()
    for name, s in workers(services).items():
        assert url.path in mounts(s), f"worker {name} lacks the shard volume at {url.path}"
        source, read_only = mounts(s)[url.path]
        assert not read_only, name
        sources.add(source)
    assert len(sources) == 1 and not sources.pop().startswith(("/", "."))  # one named volume, not a bind mount


def test_duckdb_volume_only_where_the_writer_needs_it(services: dict[str, dict]) -> None:
    writer = settings_of(services["writer"])
    db_dir = str(Path(writer.db_path).parent)
    source, read_only = mounts(services["writer"])[db_dir]
    assert not read_only
    holders = {name: mounts(s)[db_dir] for name, s in services.items() if mounts(s).get(db_dir, ("",))[0] == source}
    writable = {name for name, (_, ro) in holders.items() if not ro}
    assert writable == {"writer", "crawl-init"}  # crawl-init creates the database before the writer starts
    assert holders.get("api-server") == (source, True)  # the Crawl page's snapshot under data_dir
    assert settings_of(services["api-server"]).data_dir == db_dir
    for name in workers(services):
        if name != "writer":
            assert db_dir not in mounts(services[name]), f"general worker {name} mounts the database"


def test_crawl_reaches_the_demo_web_service(services: dict[str, dict]) -> None:
    web = services["demo-web"]
    address = web["networks"]["default"]["ipv4_address"]
    subnet = ipaddress.ip_network(
        yaml.safe_load(COMPOSE.read_text())["networks"]["default"]["ipam"]["config"][0]["subnet"])
    assert ipaddress.ip_address(address) in subnet
    port = settings_of(web).demo_port
    assert str(port) in " ".join(web["healthcheck"]["test"])
    for name in workers(services):
        settings = settings_of(services[name])
        assert settings.connect_target("apple.demo.test") == (address, port), name
        assert any(ipaddress.ip_address(address) in ipaddress.ip_network(c) for c in settings.allow_networks_list())
    seeds = Path(settings_of(services["writer"]).seeds_file)
    web_dir = Path(settings_of(web).data_dir) / "demo-web"
    assert seeds.parent == web_dir
    assert mounts(web)[str(web_dir)][0] == mounts(services["writer"])[str(web_dir)][0]


def test_dependencies_wait_for_health_or_completion(services: dict[str, dict]) -> None:
    for name, s in services.items():
        for dep, cond in (s.get("depends_on") or {}).items():
            condition = cond.get("condition")
            if condition == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep}, which has no healthcheck"
            else:
                assert condition == "service_completed_successfully", f"{name} -> {dep}: {condition}"
                assert services[dep].get("restart") == "no", f"{dep} is a one-shot job"
        if s.get("restart") != "no":
            assert "healthcheck" in s, f"long-running service {name} has no healthcheck"
    assert services["writer"]["depends_on"]["crawl-init"]["condition"] == "service_completed_successfully"


def test_image_installs_the_lock() -> None:
    text = DOCKERFILE.read_text()
    # the base image is a build argument: the public Python image by default, a locally made Debian one in CI
    assert re.search(r"^ARG BASE_IMAGE=python:3\.11-slim-bookworm$", text, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", text, re.M)
    assert re.search(r"^USER airflow$", text, re.M) and re.search(r"^HEALTHCHECK ", text, re.M)
    copied = re.search(rf"^COPY .*\b{re.escape(LOCK.name)} (\S+)$", text, re.M)
    assert copied, f"the Dockerfile does not copy {LOCK.name}"
    runs = [" ".join(m.split()) for m in re.findall(r"^RUN (.+?)(?<!\\)$", text, re.M | re.S)]
    lock_install = [r for r in runs if f"-r {copied[1]}" in r]
    assert lock_install and "--require-hashes" in lock_install[0] and "--no-deps" in lock_install[0]
    assert any(re.search(r"pip install .*--no-deps /opt/crawlcycle$", r) for r in runs)  # not editable
    assert text.index(copied[0]) < text.index("COPY --chown=airflow:0 . /opt/crawlcycle")  # lock layer first


def test_image_paths_are_in_the_repository(services: dict[str, dict]) -> None:
    """The image copies the repository to /opt/crawlcycle: what the image and compose name there must exist."""
    named = re.findall(r"/opt/crawlcycle/[\w./-]+", DOCKERFILE.read_text())
    named += [arg for arg in services["demo-web"]["command"] if arg.startswith("/opt/crawlcycle/")]
    assert "/opt/crawlcycle/dags" in named and "/opt/crawlcycle/plugins" in named
    for path in named:
        assert (ROOT / path.removeprefix("/opt/crawlcycle/")).exists(), path


def _pins(lock: Path) -> dict[str, str]:
    """Package -> version of a lock; fails on an entry pip's --require-hashes would refuse (no exact pin or hash)."""
    entries = [e for e in re.split(r"\n(?=\S)", lock.read_text()) if e.strip() and not e.startswith("#")]
    pins = {}
    for entry in entries:
        pin = re.match(r"^([A-Za-z0-9._-]+)==(\S+)", entry)
        assert pin and "--hash=sha256:" in entry, f"{lock.name}: {entry.splitlines()[0]}"
        pins[pin[1].lower()] = pin[2]
    return pins


def test_locks_pin_every_package_with_hashes_and_nest_by_use() -> None:
    base, image, dev = _pins(ROOT / "requirements.lock"), _pins(LOCK), _pins(ROOT / "requirements-dev.lock")
    assert len(base) > 100
    # base install < the image (base + scale-out) < dev (every extra + test tools), each at the same versions
    assert {name: image.get(name) for name in base} == base and {name: dev.get(name) for name in image} == image
    lab, scale_out = {"matplotlib", "bm25s", "tantivy"}, {"celery", "psycopg2-binary", "redis"}
    tools = {"pytest", "ruff"}
    assert not (lab | scale_out | tools) & set(base)
    assert scale_out <= set(image) and not (lab | tools) & set(image)
    assert lab | scale_out | tools <= set(dev)


def test_dockerignore_keeps_local_state_out() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", "data", ".airflow", "test-output", "docker/.env"} <= ignored


def test_demo_web_container_serves_every_interface(tmp_path: Path) -> None:
    """The demo-web service's command: generates the demo web, then serves it to other hosts, not loopback only."""
    port = free_port()
    env = {**os.environ, "CRAWLCYCLE_USER_AGENT": "crawlcycle-test/0.1 (+http://127.0.0.1/contact)",
           "CRAWLCYCLE_DATA_DIR": str(tmp_path), "CRAWLCYCLE_DEMO_PORT": str(port),
           "CRAWLCYCLE_DEMO_HOSTS": "8", "CRAWLCYCLE_DEMO_PAGES": "240"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "docker" / "serve_demo_web.py")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        listening = []
        while not listening and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()
            listening = [c.laddr for c in psutil.Process(proc.pid).net_connections("tcp")
                         if c.status == psutil.CONN_LISTEN]
            time.sleep(0.2)
        assert listening == [("0.0.0.0", port)]
        seed = (tmp_path / "demo-web" / "seeds.txt").read_text().split()[0]
        parts = urlsplit(seed)
        r = requests.get(f"http://127.0.0.1:{port}{parts.path or '/'}", headers={"Host": parts.netloc}, timeout=10)
        assert r.status_code == 200 and "<html" in r.text.lower()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
