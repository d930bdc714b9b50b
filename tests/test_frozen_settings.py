"""A cycle runs with the settings its begin resolved and recorded: tasks run one by one as the DAG runs them through
``stages.run_task``, begin with the settings as they stand (the file CRAWLCYCLE_CONFIG names, the environment, the
run's parameters), each later task with what begin handed on and the environment, while the test edits the file and
the environment between them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

import lxml.html
import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.cli import main
from crawlcycle.contracts.errors import InputError
from crawlcycle.contracts.shard_files import SETTINGS, WARC, DamagedShardFile
from crawlcycle.db import connect
from crawlcycle.devtools.demo_web import DemoWeb
from crawlcycle.pipeline import stages
from crawlcycle.pipeline.stage_order import SHARD, STAGE_ORDER, TASKS
from crawlcycle.settings import SETTING_NAMES, Settings
from crawlcycle.settings.sources import write_toml
from crawlcycle.ui import crawl_views
from tests.support.demo import USER_AGENT, demo_settings

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
EDITED_AGENT = "crawlcycle-test/0.2 (+http://127.0.0.1/contact)"


def run_like_the_dag(day: date, after: Callable[[str], None] = lambda name: None,
                     params: dict | None = None) -> dict:
    """One cycle, task by task, as the DAG runs it; ``after(task name)`` once each task has run."""
    inputs: dict = {"start": day, "end": None, "run_id": f"test {day}"}
    begun = None  # what begin resolved, handed on to the later tasks
    for t in STAGE_ORDER:
        live = stages.run_settings(params, begun)
        if t.kind == SHARD:
            out = [stages.run_task(t, live, {**inputs, "shard": s}) for s in inputs["shards"]]
        else:
            out = stages.run_task(t, live, inputs)
        begun = begun or live.record()
        if t.gives:
            inputs[t.gives] = out
        after(t.name)
    return inputs


def _q(settings: Settings, sql: str, params: list | None = None) -> list[tuple]:
    with connect(settings, read_only=True) as con:
        return con.execute(sql, params).fetchall()


def _record(settings: Settings, cycle: int) -> dict:
    return json.loads(_q(settings, "SELECT settings FROM cycles WHERE cycle = ?", [cycle])[0][0])


def _agents(settings: Settings, cycle: int) -> set[str]:
    """The User-Agent of every request the cycle's fetch sent, from its WARC files."""
    agents = set()
    for warc in Path(settings.data_dir).glob(f"cycles/{cycle:05d}/shard-*/{WARC}"):
        with open(warc, "rb") as f:
            agents |= {r.http_headers.get_header("User-Agent") for r in ArchiveIterator(f) if r.rec_type == "request"}
    return agents


class Crawl:
    """Two cycles run like the DAG from a settings file and the environment. Cycle 1 begins with batch_size 12 (file)
    and policy bfs (CRAWLCYCLE_POLICY); after its plan_shards the file's user_agent changes, after its refit its
    batch_size (5) and the variable (random). Cycle 2 runs with the run parameter per_host_cap = 3."""

    def __init__(self, folder: Path, demo_web: DemoWeb, port: int, monkeypatch: pytest.MonkeyPatch) -> None:
        self.config = folder / "crawlcycle.toml"
        self.settings = demo_settings(folder, demo_web, port, batch_size=12, shards=2)
        write_toml(self.settings, self.config)
        monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(self.config))
        monkeypatch.setenv("CRAWLCYCLE_POLICY", "bfs")
        stages.init(self.settings)

        def edit(task: str) -> None:
            if task == "plan_shards":
                write_toml(replace(self.settings, user_agent=EDITED_AGENT), self.config)
            if task == "refit":
                write_toml(replace(self.settings, user_agent=EDITED_AGENT, batch_size=5), self.config)
                monkeypatch.setenv("CRAWLCYCLE_POLICY", "random")

        self.shards = run_like_the_dag(DAY1, after=edit)["shards"]
        run_like_the_dag(DAY2, params={"per_host_cap": 3})


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory, demo_web: DemoWeb, demo_server: int) -> Crawl:
    with pytest.MonkeyPatch.context() as monkeypatch:
        return Crawl(tmp_path_factory.mktemp("frozen"), demo_web, demo_server, monkeypatch)


def test_a_cycle_records_every_setting_and_where_each_not_at_its_default_came_from(crawl: Crawl) -> None:
    first, second = _record(crawl.settings, 1), _record(crawl.settings, 2)
    assert list(first["values"]) == list(SETTING_NAMES)
    assert {k: first["values"][k] for k in ("batch_size", "policy", "user_agent", "per_host_cap")} == {
        "batch_size": 12, "policy": "bfs", "user_agent": USER_AGENT, "per_host_cap": 20}
    assert {k: second["values"][k] for k in ("batch_size", "policy", "user_agent", "per_host_cap")} == {
        "batch_size": 5, "policy": "random", "user_agent": EDITED_AGENT, "per_host_cap": 3}
    file = f"file {crawl.config}"
    assert (first["sources"]["batch_size"], first["sources"]["policy"]) == (file, "environment CRAWLCYCLE_POLICY")
    assert (second["sources"]["batch_size"], second["sources"]["per_host_cap"]) == (file,
                                                                                     "run parameter per_host_cap")
    # a value the file gives at its default has no source: max_redirects, and data_dir, the folder data beside it
    assert first["values"]["max_redirects"] == 5 and first["values"]["data_dir"] == str(crawl.config.parent / "data")
    assert set(first["sources"]) == {n for n in SETTING_NAMES if first["values"][n] != getattr(Settings(), n)} - {
        "data_dir"}
    assert _q(crawl.settings, "SELECT cycle, policy FROM cycles ORDER BY cycle") == [(1, "bfs"), (2, "random")]


def test_an_edit_mid_cycle_applies_from_the_next_cycle(crawl: Crawl) -> None:
    # cycle 1 chose batch 2 with the batch size and policy it began with, edited after its refit
    batches = _q(crawl.settings, "SELECT fetch_cycle, count(*), any_value(policy) FILTER (WHERE kind = 'new'), max(n) "
                                 "FROM (SELECT fetch_cycle, policy, kind, count(*) OVER (PARTITION BY fetch_cycle, "
                                 "host) n FROM batches) GROUP BY 1 ORDER BY 1")
    assert [b[:3] for b in batches[1:]] == [(2, 12, "bfs"), (3, 5, "random")]
    assert batches[2][3] <= 3  # the run parameter of cycle 2
    # cycle 1's fetch sent the user agent it began with, edited after its plan_shards, which cycle 2's sent
    assert (_agents(crawl.settings, 1), _agents(crawl.settings, 2)) == ({USER_AGENT}, {EDITED_AGENT})
    assert {json.loads(Path(s, SETTINGS).read_text())["values"]["user_agent"] for s in crawl.shards} == {USER_AGENT}


def test_a_retry_after_an_edit_runs_with_the_recorded_settings(crawl: Crawl, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    edited = tmp_path / "edited.toml"
    write_toml(replace(crawl.settings, batch_size=3, user_agent="crawlcycle-test/0.3 (+http://127.0.0.1/c)"), edited)
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(edited))
    monkeypatch.setenv("CRAWLCYCLE_POLICY", "indegree")
    batch = "SELECT url, rank, policy FROM batches WHERE fetch_cycle = 3 ORDER BY rank"
    chosen = _q(crawl.settings, batch)
    stages.run_task(TASKS["materialize"], stages.run_settings(), {"cycle": 2})
    assert _q(crawl.settings, batch) == chosen
    shard = sorted(Path(crawl.settings.data_dir).glob("cycles/00002/shard-*"))[0]
    stages.run_task(TASKS["fetch"], stages.run_settings(), {"shard": str(shard)})
    assert _agents(crawl.settings, 2) == {EDITED_AGENT}


def test_report_settings_prints_the_changes_between_cycles(crawl: Crawl, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", "--settings", "--config", str(crawl.config)]) == 0
    rows = [[cell.strip() for cell in line.strip("│").split("┆")] for line in capsys.readouterr().out.splitlines()
            if line.startswith("│") and not line.startswith("│ cycle ")]
    file = f"file {crawl.config}"
    assert rows == [["2", "batch_size", "12 → 5", file], ["2", "per_host_cap", "20 → 3", "run parameter per_host_cap"],
                    ["2", "policy", "bfs → random", "environment CRAWLCYCLE_POLICY"],
                    ["2", "user_agent", f"{USER_AGENT} → {EDITED_AGENT}", file]]


def test_the_crawl_page_shows_each_cycle_s_settings_and_the_changes(crawl: Crawl) -> None:
    doc = lxml.html.fromstring(crawl_views.page(crawl.settings))

    def rows(table: str, *cols: str) -> list[tuple[str, ...]]:
        return list(zip(*[[td.text_content() for td in doc.xpath(f'//table[@id="{table}"]//td[@data-col="{c}"]')]
                          for c in cols], strict=True))

    assert rows("setting-changes", "cycle", "setting", "change")[:2] == [("2", "batch_size", "12 → 5"),
                                                                          ("2", "per_host_cap", "20 → 3")]
    shown = rows("settings", "cycle", "setting", "value", "source")
    assert ("1", "batch_size", "12", f"file {crawl.config}") in shown
    assert ("2", "policy", "random", "environment CRAWLCYCLE_POLICY") in shown
    assert not [r for r in shown if r[1] == "max_redirects"]  # at its default


def test_plan_shards_splits_with_the_recorded_settings_and_a_replayed_begin_records_afresh(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "crawlcycle.toml"
    write_toml(replace(settings, shards=3, policy="bfs"), config)
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(config))
    stages.init(settings)
    cycle = stages.run_task(TASKS["begin"], stages.run_settings(), {"start": DAY1, "end": None, "run_id": "a"})
    write_toml(replace(settings, shards=1, policy="random"), config)
    shards = stages.run_task(TASKS["plan_shards"], stages.run_settings(), {"cycle": cycle})
    # the first batch, chosen now, and its split follow the settings begin recorded
    assert len(shards) > 1 and _q(settings, "SELECT DISTINCT policy FROM batches WHERE fetch_cycle = 1") == [("bfs",)]
    assert {json.loads(Path(s, SETTINGS).read_text())["values"]["shards"] for s in shards} == {3}
    # a replay of the interval begins again: it records the settings as they now stand
    stages.run_task(TASKS["begin"], stages.run_settings(), {"start": DAY1, "end": None, "run_id": "b"})
    assert _record(settings, 1)["values"]["shards"] == 1
    assert len(stages.run_task(TASKS["plan_shards"], stages.run_settings(), {"cycle": cycle})) == 1


def test_a_task_without_its_cycle_s_record_fails_in_one_line(settings: Settings, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(settings, tmp_path / "crawlcycle.toml")
    monkeypatch.setenv("CRAWLCYCLE_CONFIG", str(tmp_path / "crawlcycle.toml"))
    stages.init(settings)
    cycle = stages.run_task(TASKS["begin"], stages.run_settings(), {"start": DAY1, "end": None, "run_id": "a"})
    (shard, *_) = stages.run_task(TASKS["plan_shards"], stages.run_settings(), {"cycle": cycle})
    Path(shard, SETTINGS).unlink()
    with pytest.raises(DamagedShardFile) as err:
        stages.run_task(TASKS["fetch"], stages.run_settings(), {"shard": shard})
    assert str(err.value) == (f"shard file {shard}/{SETTINGS} is missing or damaged (FileNotFoundError); run the "
                              f"plan_shards task of {Path(shard).name} again")
    with connect(settings) as con:  # a cycle begun before cycles recorded their settings
        con.execute("UPDATE cycles SET settings = NULL")
    with pytest.raises(InputError) as err:
        stages.run_task(TASKS["plan_shards"], stages.run_settings(), {"cycle": cycle})
    assert str(err.value) == ("cycle 1 has no recorded settings (its begin ran before cycles recorded them): run the "
                              "cycle again from its begin task")
