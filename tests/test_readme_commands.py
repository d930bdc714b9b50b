"""Every command the README and the documentation pages (docs/**/*.md) show runs as written, from a project root,
in a shell without CRAWLCYCLE_* variables: the commands of "Run cycles without a scheduler"
(docs/howto/run-without-airflow.md) make a demo-sized crawl, then every other command runs against it. Commands
that cannot run here are excluded by name, each with the test that covers it instead; a command that is neither run
nor excluded fails the test."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawlcycle.settings import SECTION_OF
from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[1]
# The pages whose commands are checked: the README and every page of the documentation site.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
VENV = Path(sys.executable).parents[1]
_FENCE = re.compile(r"^[ \t]*```(\w*)[ \t]*\n(.*?)^[ \t]*```", flags=re.MULTILINE | re.DOTALL)

# Each command the tests cannot run, with the reason and where it is tested instead.
CONTAINERS = "needs podman, root and minutes of image builds; tests/test_container_stack.py runs it"
OWN_CRAWL = ("a crawl of one's own sites under a running scheduler, in a folder beside the project; "
             "tests/test_own_crawl.py runs the page's commands in its order against a loopback site")
EXCLUDED = {
    **{c: OWN_CRAWL for c in (
        ".venv/bin/crawlcycle init --config ../my-crawl/crawlcycle.toml",
        ".venv/bin/crawlcycle airflow --config ../my-crawl/crawlcycle.toml",
        'eval "$(.venv/bin/crawlcycle airflow-env --config ../my-crawl/crawlcycle.toml)"',
        ".venv/bin/airflow dags unpause crawl_cycle",
        ".venv/bin/airflow dags trigger crawl_cycle",
        ".venv/bin/crawlcycle report --config ../my-crawl/crawlcycle.toml",
        '.venv/bin/crawlcycle sql --config ../my-crawl/crawlcycle.toml "SELECT rank, kind, url, why FROM '
        'v_batch_explain WHERE fetch_cycle = (SELECT max(fetch_cycle) FROM batches) ORDER BY rank LIMIT 20"')},
    "make demo": "Airflow standalone for minutes on ports 8080 and 8089; tests/test_scheduler.py backfills cycles "
                 "under a real scheduler and tests/test_dag.py runs the DAG",
    "make test": "the test suite itself",
    ".venv/bin/crawlcycle fit-ranker": "needs your engine's results log (results_log_dir); the page's next block "
                                       "runs it as written on the stand-in engine's",
    "make soak": "fourteen daily cycles under Airflow's scheduler with thirty kills: a quarter of an hour; "
                 "tests/test_soak.py runs three cycles with two kills of each target",
    "make docs-serve": "serves the documentation site until Ctrl-C; tests/test_docs.py builds it with mkdocs build "
                       "--strict",
    ".venv/bin/crawlcycle fault-run --cycles 10 --kills 200 --seed 1":
        "two crawls of ten cycles and 200 kills: most of an hour; tests/test_fault_run.py runs the fault run on two "
        "cycles with six kills",
    "CRAWLCYCLE_SNAPSHOT=$PWD/../shared/corpus/dev-docs.warc.gz CRAWLCYCLE_SEEDS_FILE=$PWD/data/docs-seeds.txt "
    "make demo": "make demo over the documentation snapshot; tests/test_snapshot_crawl.py crawls that snapshot",
    "make ui": "runs Airflow until Ctrl-C; tests/test_crawl_page.py starts Airflow standalone and opens its UI",
    ".venv/bin/airflow backfill create --dag-id crawl_cycle --from-date 2026-11-04 --to-date 2026-11-06 "
    "--max-active-runs 1": "needs a running scheduler; tests/test_scheduler.py backfills under one",
    ".venv/bin/crawlcycle simulate --snapshot site.warc.gz --queries queries.tsv --seeds seeds.txt --policy all "
    "--batch-size 50 --cycles 5 --out sim/ --user-agent \"me (+https://example.org/crawler)\"":
        "placeholder files, and every policy for five cycles takes minutes; tests/test_simulator.py runs simulate, "
        "--policy all included",
    ".venv/bin/crawlcycle simulate --snapshot data/dev-docs-over-time/bullseye.warc.gz --snapshot "
    "data/dev-docs-over-time/bookworm.warc.gz@5 --snapshot data/dev-docs-over-time/trixie.warc.gz@9 --snapshot "
    "data/dev-docs-over-time/sid.warc.gz@13 --queries sim/queries.tsv --seeds sim/seeds.txt --refresh-policy all "
    "--cycles 16 --batch-size 190 --jobs 2 --out sim/ --user-agent \"me (+https://example.org/crawler)\"":
        "a series built from Debian packages (bench/series.py build), every refresh policy for 16 cycles: hours; "
        "tests/test_simulator.py simulates two-version series, serially and side by side",
    ".venv/bin/python bench/series.py refresh --regime covered --runs 3 --jobs 2 --policies impact none user_centric":
        "three refresh policies, three runs of sixteen cycles on a series built from Debian packages: about an hour "
        "on 2 cores; tests/test_simulator.py simulates two-version series with refresh policies and checks the "
        "change models' calibration",
    ".venv/bin/python bench/series.py refresh --regime growing --runs 3 --jobs 2 --policies impact none":
        "two refresh policies, three runs of twelve cycles on a series built from Debian packages: half an hour on 2 "
        "cores; tests/test_simulator.py simulates two-version series with refresh policies",
    ".venv/bin/python bench/series.py --spec bench/snapshots/py-libs-over-time.json refresh --regime covered --runs 2":
        "every refresh policy, two runs of sixteen cycles on a second series built from Debian packages: hours on 2 "
        "cores; tests/test_simulator.py simulates two-version series with refresh policies",
    ".venv/bin/python bench/policies.py --runs 3 --jobs 2":
        "every policy, three runs, on two snapshots: most of an hour; tests/test_bench_policies.py checks its "
        "seeds, aggregation and tables, tests/test_simulator.py the simulations it runs",
    ".venv/bin/python bench/policies.py --compare HEAD~1 --only dev-docs --runs 3 --jobs 2":
        "hybrid and two rivals, three runs, at two revisions: most of an hour on 2 cores; tests/test_bench_compare.py "
        "compares against HEAD on a generated web",
    ".venv/bin/python bench/policies.py --only py-web-docs":
        "every policy, three runs, on a snapshot built from Debian packages first: most of an hour; "
        "tests/test_bench_policies.py checks its seeds, aggregation and tables",
    ".venv/bin/python bench/policies.py --only sci-docs":
        "every policy, three runs, on a snapshot built from Debian packages first: a quarter of an hour; "
        "tests/test_bench_policies.py checks its seeds, aggregation and tables",
    ".venv/bin/python ../shared/corpus/build_snapshot.py bench/snapshots/py-web-docs.json data/py-web-docs.warc.gz":
        "downloads six Debian packages from the Debian mirror first, then about 25 s; bench/policies.py names this "
        "command when the WARC is missing",
    ".venv/bin/python ../shared/corpus/build_snapshot.py bench/snapshots/sci-docs.json data/sci-docs.warc.gz":
        "downloads five Debian packages first; built like py-web-docs",
    ".venv/bin/crawlcycle simulate --snapshot data/py-web-docs.warc.gz --queries queries.tsv --seeds seeds.txt "
    "--policy hybrid --cycles 6 --batch-size 200 --out OUT --cache CACHE --data-dir DATA":
        "placeholder files and a snapshot built from Debian packages, run twice; "
        "tests/test_identical_replays.py crawls a real snapshot twice and compares every table",
    ".venv/bin/python bench/canonicals.py":
        "a 15-cycle crawl of three real snapshots, two of them built from Debian packages first: about ten minutes; "
        "tests/test_canonical_links.py and tests/test_parse.py check what it counts",
    ".venv/bin/python bench/score.py --scale 10 --state data/bench-score":
        "builds a 10 M-URL crawl state (a quarter of an hour, 7 GB) and times the stages on it (15 minutes more); "
        "make bench-score runs the same bench at scale 1",
    ".venv/bin/python bench/score.py --scale 1 3 --state data/bench-score":
        "builds and times scales 1 and 3: about 15 minutes; make bench-score runs scale 1",
    ".venv/bin/python bench/score.py --scale 3 --batch 50000 --state data/bench-score":
        "builds a 3 M-URL crawl state and times the stages on it with a batch of 50,000: about 20 minutes; "
        "make bench-score runs the same bench at scale 1",
    'echo "AIRFLOW_JWT_SECRET=$(openssl rand -hex 32)" > docker/.env':
        "writes the secret of the Docker deployment; tests/test_docker.py checks the compose file refuses to start "
        "without one",
    "docker-compose -f docker/docker-compose.yml up -d --build": "needs a Docker daemon; tests/test_docker.py "
                                                                 "resolves the compose file with docker-compose config",
    "docker-compose -f docker/docker-compose.yml exec scheduler airflow dags unpause crawl_cycle":
        "needs the running deployment; tests/test_docker.py",
    "docker-compose -f docker/docker-compose.yml exec scheduler airflow backfill create --dag-id crawl_cycle "
    "--from-date 2026-11-01 --to-date 2026-11-03 --max-active-runs 1":
        "needs the running deployment; tests/test_docker.py, and tests/test_scheduler.py for the backfill",
    "CRAWLCYCLE_SHARDS=8 docker-compose -f docker/docker-compose.yml up -d --scale worker=4":
        "needs a Docker daemon; tests/test_docker.py",
    # docs/howto/containers.md: what tests/test_container_stack.py runs, as root with podman
    'docker build -f docker/Dockerfile -t crawlcycle-airflow --secret '
    'id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt .': CONTAINERS,
    'apt-get install -y podman runc netavark aardvark-dns debootstrap docker-compose': CONTAINERS,
    'export CONTAINERS_CONF=$PWD/docker/podman-containers.conf': CONTAINERS,
    'debootstrap --variant=minbase bookworm ~/.cache/crawlcycle-containers/rootfs '
    'http://deb.debian.org/debian': CONTAINERS,
    'tar -C ~/.cache/crawlcycle-containers/rootfs -cf ~/.cache/crawlcycle-containers/debian-bookworm-'
    'minbase.tar .': CONTAINERS,
    'podman import ~/.cache/crawlcycle-containers/debian-bookworm-minbase.tar localhost/crawlcycle-'
    'debian:bookworm': CONTAINERS,
    'podman build --format docker -f docker/services.Dockerfile --build-arg '
    'BASE_IMAGE=localhost/crawlcycle-debian:bookworm -t localhost/crawlcycle-services:test .': CONTAINERS,
    'podman build --format docker -f docker/Dockerfile --build-arg BASE_IMAGE=localhost/crawlcycle-'
    'debian:bookworm --secret id=pip_cert,src=/etc/ssl/certs/ca-certificates.crt -t '
    'localhost/crawlcycle-airflow:test .': CONTAINERS,
    'setsid -f podman system service --time=0 unix:///run/crawlcycle-podman.sock': CONTAINERS,
    "setsid -f sh -c 'while sleep 5; do podman ps -q --filter health=starting | xargs -r -n 1 podman "
    "healthcheck run; done'": CONTAINERS,
    'export DOCKER_HOST=unix:///run/crawlcycle-podman.sock AIRFLOW_JWT_SECRET=$(openssl rand -hex 32)'
    ' AIRFLOW_PORT=8080 CRAWLCYCLE_IMAGE=localhost/crawlcycle-airflow:test '
    'POSTGRES_IMAGE=localhost/crawlcycle-services:test REDIS_IMAGE=localhost/crawlcycle-services:test': CONTAINERS,
    'docker-compose -p crawlcycle-stack-test -f docker/docker-compose.yml up -d --no-build': CONTAINERS,
    'docker-compose -p crawlcycle-stack-test -f docker/docker-compose.yml exec -T scheduler airflow '
    'dags unpause crawl_cycle': CONTAINERS,
    'docker-compose -p crawlcycle-stack-test -f docker/docker-compose.yml exec -T scheduler airflow '
    'backfill create --dag-id crawl_cycle --from-date 2026-11-01 --to-date 2026-11-02 --max-active-'
    'runs 1': CONTAINERS,
    'docker-compose -p crawlcycle-stack-test -f docker/docker-compose.yml down -v': CONTAINERS,
}

# A copy of crawlcycle.toml with these values: a small demo web, so the run takes about a minute.
SMALL = {"demo_hosts": 6, "demo_pages": 120, "batch_size": 50, "per_host_cap": 12, "shards": 2,
         "parse_workers": 1}
# `make demo` leaves three cycles, and the inspection commands name cycle 3.
MORE_CYCLES = ("2026-11-02", "2026-11-03")


@dataclass(frozen=True)
class Expect:
    command: str  # regular expression found in the command
    shows: str  # regular expression found in what it prints
    probe: str = ""  # shell line run after the command, in its shell, for a command that prints nothing


EXPECT = [
    Expect(r"^mkdir -p data && printf", r"\Ahttp://python\.docs\.test/index\.html\nhttp://django\.docs\.test/",
           probe="cat data/docs-seeds.txt"),
    Expect(r"crawlcycle airflow-env\)", r"\A\S+/\.airflow\n(?P<root>\S+)/crawlcycle\.toml\n\Z",
           probe='printf "%s\\n" "$AIRFLOW_HOME" "$CRAWLCYCLE_CONFIG"'),
    Expect(r"crawlcycle demo-web --serve", r"serving \d+ URLs of 6 hosts( in \d+ versions)? on http://127\.0\.0\.1:\d+"),
    Expect(r"crawlcycle init\b", r"database ready: \d+ migrations applied, \d+ seed URLs admitted"),
    Expect(r"crawlcycle cycle --date 2026-11-01", r"cycle 1: .*next batch"),
    Expect(r"crawlcycle report(?! --settings)", r"2026-11-01.*done"),
    Expect(r"crawlcycle report --settings$", r"\Ano setting changed between cycles"),
    Expect(r'crawlcycle sql "SELECT \* FROM v_next_batch LIMIT 20"', r"shape: \(20, \d+\)"),
    Expect(r"python -c .*v_host_health", r"\.demo\.test"),
    Expect(r"crawlcycle canon", r"\Ahttp://example\.com/a/c\n\Z"),
    Expect(r"FROM v_batch_explain", r"shape: \(20, 7\)"),
    Expect(r"metrics FROM model_runs ORDER BY", r"shape: \(\d+, 4\)"),
    Expect(r"crawlcycle check materialize --cycle 3", r"gate materialize passed for cycle 3"),
    Expect(r"FROM dq_results WHERE NOT success", r"shape: \(0, 6\)"),
    Expect(r"scope_reason\(url, host, hops", r"shape: \(\d+, 2\).*reason.*count_star"),
    Expect(r"crawlcycle\.evaluation\.stand_in_engine data/engine-results",
           r"\Astand_in_engine: [\d,]+ results of [\d,]+ queries over [\d,]+ pages in data/engine-results/dt=2026-"),
    Expect(r"RESULTS_LOG_DIR=data/engine-results .*fit-ranker --quiet",
           r"results log dt=2026-\S+: [\d,]+ queries.*top-10 overlap with your engine: 0\.\d{3} with the settings now, "
           r"(0\.\d{3}|1\.000) fitted\n(put these in the \[ranking\] section|the settings now fit best)"),
    Expect(r"RESULTS_LOG_DIR=data/engine-results .*cycle --date 2026-11-04", r"cycle 4: .*next batch"),
    # the engine's lists decided some of cycle 4's results, and the reference ranker's the rest
    Expect(r"FROM query_results GROUP BY ALL", r"│ 4\s+┆ engine\s+┆ [1-9]\d*\s+│\n│ 4\s+┆ reference\s+┆ \d+"),
    Expect(r"FROM model_runs WHERE model = 'engine_results'", r"shape: \(1, 2\).*│ 4\s+┆ "),
]


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole shell command: no open quote, no trailing backslash."""
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return False
    return not text.endswith("\\")


def page_commands(path: Path) -> list[list[str]]:
    """The shell commands of each fenced block of one page (marked bash, sh or shell, or unmarked), a command
    continued over lines kept whole; then, as a block of its own, every inline code span that runs something in
    .venv/bin."""
    text = path.read_text()
    blocks = []
    for info, body in _FENCE.findall(text):
        if info not in ("", "bash", "sh", "shell"):
            continue
        commands, pending = [], ""
        for line in textwrap.dedent(body).splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            pending = f"{pending}\n{line}" if pending else line
            if _complete(pending):
                commands.append(pending)
                pending = ""
        assert not pending, f"unfinished command in {path.relative_to(ROOT)}: {pending}"
        blocks.append(commands)
    spans = re.findall(r"`([^`]+)`", _FENCE.sub("", text))
    blocks.append([" ".join(span.split()) for span in spans if ".venv/bin/" in span])
    return blocks


def shown_commands() -> list[list[str]]:
    """The blocks of commands of every page, README first."""
    return [block for path in PAGES for block in page_commands(path)]


def key(command: str) -> str:
    """A command on one line, without its trailing comment: how EXCLUDED names it."""
    line = " ".join(re.sub(r"\\\n", " ", command).split())
    return re.sub(r"\s+#\s[^'\"]*$", "", line)


def test_every_command_shown_is_run_or_excluded() -> None:
    commands = [key(c) for block in shown_commands() for c in block]
    assert len(commands) > 15
    assert not sorted(set(EXCLUDED) - set(commands)), "excluded, but no longer on any page"
    for command in commands:
        if command not in EXCLUDED:
            assert [e for e in EXPECT if re.search(e.command, command)], \
                f"command shown neither run with a check of its output nor excluded: {command}"


def _project(tmp_path: Path, port: int) -> Path:
    """A project root: .venv (this venv) and crawlcycle.toml, with ``port`` for 8089 (a running demo keeps
    its port) and the values of SMALL."""
    root = tmp_path / "project"
    root.mkdir()
    (root / ".venv").symlink_to(VENV)
    tables = tomllib.loads((ROOT / "crawlcycle.toml").read_text().replace("8089", str(port)))
    for name, value in SMALL.items():
        tables.setdefault(SECTION_OF[name], {})[name] = value
    (root / "crawlcycle.toml").write_text("".join(
        f"[{section}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
        for section, table in tables.items()))
    return root


def _wait_for_port(port: int, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the demo web stopped: {log.read_text()}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail(f"the demo web did not come up: {log.read_text()}")


def test_every_command_shown_runs_as_written(tmp_path: Path) -> None:
    port = free_port()
    root = _project(tmp_path, port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAWLCYCLE_")}
    blocks = shown_commands()
    # The block that starts the demo web in the background makes the crawl every other command reads.
    (setup,) = [b for b in blocks if any(key(c).endswith("&") for c in b)]
    order = [*setup, *(f".venv/bin/crawlcycle cycle --date {day}" for day in MORE_CYCLES),
             *(c for b in blocks if b is not setup for c in b if key(c) not in EXCLUDED)]
    order = list({key(c): c for c in reversed(order)}.values())[::-1]  # shown on several pages: run once, first
    server, log = None, tmp_path / "demo-web.log"
    try:
        for command in order:
            checks = [e for e in EXPECT if re.search(e.command, key(command))]
            if key(command).endswith("&"):
                with log.open("w") as out:
                    server = subprocess.Popen(["bash", "-c", f"exec {key(command)[:-1]}"], cwd=root, env=env,
                                              stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                _wait_for_port(port, server, log)
                printed = log.read_text()
            else:
                script = "\n".join([command, *(e.probe for e in checks if e.probe)])
                res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=root, env=env,
                                     capture_output=True, text=True, timeout=300)
                assert res.returncode == 0, f"{command}\n{res.stdout}\n{res.stderr}"
                printed = res.stdout
            for check in checks:
                assert re.search(check.shows, printed, flags=re.DOTALL), f"{command} printed:\n{printed}"
            if "airflow-env" in command:
                assert re.search(checks[0].shows, printed)["root"] == str(root.resolve())
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
