import json
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

from crawlcycle.cli import build_parser, commands, main
from crawlcycle.contracts.canonical import UrlRules
from crawlcycle.settings import RENAMED, SECTION_OF, SECTIONS, Settings, SettingsError
from crawlcycle.settings.sources import begun, from_record, load_settings, with_overrides, write_toml

UA = {"user_agent": "bot/1 (+http://example.org/bot)"}


def test_precedence_file_then_env_then_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[fetch]\nuser_agent = "bot/1 (+http://e.org)"\n[politeness]\nmin_delay = 3\n'
                   '[ordering]\nbatch_size = 10\n[orchestration]\nshards = 5\n')
    env = {"CRAWLCYCLE_MIN_DELAY": "2", "CRAWLCYCLE_BATCH_SIZE": "20"}
    s = load_settings(cfg, overrides={"batch_size": "30"}, environ=env)
    assert (s.shards, s.min_delay, s.batch_size) == (5, 2.0, 30)
    assert with_overrides(s, {"batch_size": 40}).batch_size == 40


def test_loaded_settings_say_where_each_value_not_at_its_default_came_from(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[ordering]\nbatch_size = 10\nper_host_cap = 40\npolicy = "bfs"\n[storage]\ndata_dir = "data"\n')
    env = {"CRAWLCYCLE_MIN_DELAY": "2", "CRAWLCYCLE_BATCH_SIZE": "20"}
    s = load_settings(cfg, overrides={"shards": 5, "max_hops": None}, environ=env)
    # per_host_cap 40 and the folder data beside the file are the defaults: no source
    assert s.sources == {"batch_size": "environment CRAWLCYCLE_BATCH_SIZE", "policy": f"file {cfg}",
                         "min_delay": "environment CRAWLCYCLE_MIN_DELAY", "shards": "flag --shards"}
    run = with_overrides(s, {"policy": "random", "batch_size": 400, "max_hops": 2})
    assert run.sources == {"policy": "run parameter policy", "min_delay": "environment CRAWLCYCLE_MIN_DELAY",
                           "shards": "flag --shards", "max_hops": "run parameter max_hops"}
    assert with_overrides(run, {"max_hops": 3}, source="flag").sources["max_hops"] == "flag --max-hops"


def test_a_record_gives_its_values_but_the_live_settings_give_theirs(tmp_path: Path) -> None:
    begun = load_settings(overrides={**UA, "batch_size": 10, "db_path": str(tmp_path / "a.duckdb"),
                                     "task_timeout": 900.0}, environ={})
    now = load_settings(overrides={**UA, "batch_size": 20, "db_path": str(tmp_path / "b.duckdb")},
                        environ={"CRAWLCYCLE_POLICY": "bfs"})
    record = json.loads(json.dumps(begun.record()))  # as the database and the shard folders keep it
    frozen = from_record(record, now)
    assert frozen == replace(begun, db_path=now.db_path, task_timeout=now.task_timeout)
    assert frozen.sources == {"user_agent": "flag --user-agent", "batch_size": "flag --batch-size",
                              "db_path": "flag --db-path"}
    record["values"]["no_such_thing"] = 1
    with pytest.raises(SettingsError, match=r"^setting no_such_thing: unknown setting \(from the cycle's record\)$"):
        from_record(record, now)


def test_a_task_of_a_begun_cycle_starts_from_begin_s_record_and_never_reads_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[ordering]\nbatch_size = 10\n[storage]\ndata_dir = "state"\n')
    at_begin = load_settings(cfg, overrides=UA, environ={})
    record = json.loads(json.dumps(at_begin.record()))  # as the DAG run hands it on
    cfg.write_text("[ordering\nbatch_size = ")  # made invalid after begin
    with pytest.raises(SettingsError, match="is not valid TOML"):
        load_settings(cfg, environ={})
    env = {"CRAWLCYCLE_CONFIG": str(cfg), "CRAWLCYCLE_BATCH_SIZE": "99", "CRAWLCYCLE_DUCKDB_THREADS": "1"}
    task = begun(record, {"parse_workers": 1, "policy": "bfs"}, environ=env)
    # the record's values, the file's data_dir among them; of the environment and the overrides, only what the
    # machine running the task decides (settings.LIVE)
    assert task == replace(at_begin, duckdb_threads=1, parse_workers=1)
    assert task.data_dir == str(tmp_path / "state") and task.batch_size == 10
    assert task.sources == {**at_begin.sources, "duckdb_threads": "environment CRAWLCYCLE_DUCKDB_THREADS",
                            "parse_workers": "run parameter parse_workers"}


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    cfg = tmp_path / "sub" / "c.toml"
    cfg.write_text('[storage]\ndb_path = "x/crawl.duckdb"\n')
    assert load_settings(cfg, environ={}).db_path == str(tmp_path / "sub" / "x" / "crawl.duckdb")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"min_delay": "abc"}, "setting min_delay: expected float, got 'abc'"),
    ({"batch_size": 0}, "setting batch_size: must be at least 1"),
    ({"policy": "smartest"}, "setting policy: choose one of "),
    ({"allow_networks": "10.0.0.0/33"}, "setting allow_networks: '10.0.0.0/33' is not a CIDR"),
    ({"connect_to": "a.test=localhost"}, "setting connect_to:"),
    ({"max_delay": 0.5, "min_delay": 1}, "setting max_delay: must be >= min_delay"),
    ({"no_such_thing": 1}, "setting no_such_thing: unknown setting"),
])
def test_bad_values_fail_with_one_line_naming_the_setting(overrides: dict, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings(overrides={**UA, **overrides}, environ={})
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("user_agent", ["", "bot/1"])
def test_user_agent_with_a_contact_is_required_only_to_fetch(user_agent: str) -> None:
    settings = load_settings(overrides={"user_agent": user_agent}, environ={})  # enough to read the crawl
    with pytest.raises(SettingsError) as err:
        settings.require_user_agent()
    assert str(err.value).startswith("setting user_agent: required, and must carry a contact URL or e-mail")
    assert "\n" not in str(err.value)
    for contact in ("bot/1 (+http://example.org/bot)", "bot/1 (bot@example.org)"):
        assert load_settings(overrides={"user_agent": contact}, environ={}).require_user_agent().user_agent == contact


def test_connect_to_wildcards() -> None:
    s = load_settings(overrides={**UA, "connect_to": "*.test=127.0.0.1:81, exact.org=127.0.0.2:82"}, environ={})
    assert s.connect_target("a.b.test") == ("127.0.0.1", 81)
    assert s.connect_target("EXACT.org") == ("127.0.0.2", 82)
    assert s.connect_target("other.org") is None


def test_toml_round_trip(tmp_path: Path) -> None:
    s = load_settings(overrides={**UA, "sort_query_params": False, "min_delay": 0.25}, environ={})
    write_toml(s, tmp_path / "s.toml")
    assert load_settings(tmp_path / "s.toml", environ={}) == s


def test_cli_flag_beats_environment(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAWLCYCLE_USER_AGENT", UA["user_agent"])
    monkeypatch.setenv("CRAWLCYCLE_MIN_DELAY", "2")
    assert main(["settings", "--min-delay", "4"]) == 0
    assert "min_delay = 4.0" in capsys.readouterr().out
    assert main(["settings", "--min-delay", "x"]) == 2
    assert capsys.readouterr().err.strip() == ("crawlcycle: setting min_delay: expected float, got 'x' "
                                               "(from flag --min-delay)")


def _just_outside(f) -> object | None:
    """A value that breaks the bound field ``f`` declares, or None when it declares none."""
    m = f.metadata
    step = 1 if isinstance(f.default, int) else 0.5
    if "low" in m:
        return m["low"] - step
    if "above" in m:
        return m["above"]
    return m["high"] + step if "high" in m else m["below"] if "below" in m else None


@pytest.mark.parametrize("name", [f.name for f in fields(Settings) if _just_outside(f) is not None])
def test_every_declared_bound_is_checked(name: str) -> None:
    f = next(f for f in fields(Settings) if f.name == name)
    with pytest.raises(SettingsError, match=f"^setting {name}: must .*, got "):
        Settings(**{name: _just_outside(f)}).validate()
    Settings(**{name: f.default}).validate()


@pytest.mark.parametrize(("name", "value", "message"), [
    ("extractor", "lynx", "choose one of trafilatura_text, trafilatura, resiliparse, visible, got 'lynx'"),
    ("rw_damping", 1.0, "must lie in (0, 1), got 1.0"),
    ("match_share", 0.0, "must lie in (0, 1], got 0.0"),
    ("gate_max_error_share", 1.5, "must lie in [0, 1], got 1.5"),
    ("end_date", "2026-13-01", "expected a date YYYY-MM-DD, got '2026-13-01'"),
    ("schedule", "@hourly", "a cycle is one day's interval: expected one of @daily"),
    ("schedule", "0 */6 * * *", "a cycle is one day's interval: expected one of @daily"),
    ("denied_domains", "a.org, b c", "'b c' is not a domain name"),
    ("url_exclude", "(", "not a regular expression ("),
    ("evidence_b", "url=0.5,anchor=2,context=0.75,title=0.75", "values must lie in [0, 1], got"),
    ("bm25_weights", "title=3,anchor=2", "expected one number for each of title, text, anchor, url"),
])
def test_declared_choices_and_checks_name_the_reason(name: str, value: object, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        Settings(**{name: value}).validate()
    assert str(err.value).startswith(f"setting {name}: {message}"), str(err.value)


def test_a_schedule_at_most_daily_is_taken() -> None:
    for schedule in ("@daily", "@weekly", "30 2 * * *", "0 4 * * 1-5"):
        assert Settings(schedule=schedule).validate().schedule == schedule


def test_a_key_in_the_wrong_table_or_an_unknown_table_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[fetch]\nmin_delay = 2\n")
    with pytest.raises(SettingsError, match=r"^setting min_delay: belongs in \[politeness\], not \[fetch\]"):
        load_settings(cfg, environ={})
    cfg.write_text("[fetch]\nMin-Delay = 2\n")  # a key is the setting in any spelling the loader takes
    with pytest.raises(SettingsError, match=r"^setting Min-Delay: belongs in \[politeness\], not \[fetch\]"):
        load_settings(cfg, environ={})
    cfg.write_text("[fetching]\nmin_delay = 2\n")
    with pytest.raises(SettingsError, match=r"unknown table \[fetching\]; the tables are storage, orchestration"):
        load_settings(cfg, environ={})


def _load_in_a_process(cfg: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    code = ("from crawlcycle.settings.sources import load_settings; s = load_settings(); "
            "print(s.url_attempts, s.min_delay)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"CRAWLCYCLE_CONFIG": str(cfg), **env})


def test_a_flat_file_and_former_names_are_read_with_one_note_naming_the_new_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "old.toml"
    cfg.write_text("[crawlcycle]\nmin_delay = 2.5\nretry_limit = 5\nbatch_size = 9\n")
    res = _load_in_a_process(cfg, {})
    assert res.stdout.split() == ["5", "2.5"], res.stderr
    (note,) = res.stderr.splitlines()
    assert note == (f"crawlcycle: note: {cfg}: keys outside a section table are read until the next release; write "
                    "them as [fetch] url_attempts; [politeness] min_delay; [ordering] batch_size; retry_limit is now "
                    "[fetch] url_attempts")
    sectioned = tmp_path / "new.toml"
    sectioned.write_text("[fetch]\nurl_attempts = 4\n")
    res = _load_in_a_process(sectioned, {"CRAWLCYCLE_RETRY_LIMIT": "6"})
    assert res.stdout.split() == ["6", "1.0"]
    assert res.stderr.splitlines() == ["crawlcycle: note: environment: CRAWLCYCLE_RETRY_LIMIT is now [fetch] "
                                       "url_attempts"]
    assert _load_in_a_process(sectioned, {}).stderr == ""
    cfg.write_text("[crawlcycle]\nMin-Delay = 2.5\nRETRY_LIMIT = 5\n")
    res = _load_in_a_process(cfg, {})
    assert res.stdout.split() == ["5", "2.5"], res.stderr
    assert res.stderr.splitlines() == [f"crawlcycle: note: {cfg}: keys outside a section table are read until the "
                                       "next release; write them as [fetch] url_attempts; [politeness] min_delay; "
                                       "RETRY_LIMIT is now [fetch] url_attempts"]


def test_every_former_name_points_at_a_setting_and_is_documented() -> None:
    page = (Path(__file__).parents[1] / "docs" / "reference" / "settings.md").read_text()
    for old, new in RENAMED.items():
        assert old not in SECTION_OF and new in SECTION_OF
        assert f"| `{old}` | `[{SECTION_OF[new]}] {new}`" in page, old


def test_the_parse_section_holds_every_url_rule() -> None:
    assert {f.name for f in fields(UrlRules)} <= Settings().section("parse").keys()


def _flags(command: str) -> set[str]:
    return {a.dest for a in commands(build_parser())[command]._actions}


def test_a_command_takes_the_settings_of_the_sections_it_uses_only() -> None:
    sections = {command: {SECTION_OF[d] for d in _flags(command) if d in SECTION_OF}
                for command in ("report", "canon", "init", "cycle", "settings", "airflow-env")}
    assert sections == {"report": {"storage"}, "canon": {"parse"}, "init": {"storage", "scope", "parse"},
                        "cycle": set(SECTIONS) - {"demo"}, "settings": set(SECTIONS), "airflow-env": set()}
    assert {"min_delay", "demo_port"} & _flags("report") == set()


def test_help_lists_the_settings_by_section(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["init", "--help"])
    out = capsys.readouterr().out
    heads = [line.split()[0] for line in out.splitlines() if line.startswith("[")]
    assert heads == ["[storage]", "[scope]", "[parse]"]
    assert "--seeds-file" in out.split("[scope]")[1].split("[parse]")[0] and "--min-delay" not in out
