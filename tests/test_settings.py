from pathlib import Path

import pytest

from crawlcycle.cli import main
from crawlcycle.settings import SettingsError, load_settings, with_overrides, write_toml

UA = {"user_agent": "bot/1 (+http://example.org/bot)"}


def test_precedence_file_then_env_then_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[crawlcycle]\nuser_agent = "bot/1 (+http://e.org)"\nmin_delay = 3\nbatch_size = 10\nshards = 5\n')
    env = {"CRAWLCYCLE_MIN_DELAY": "2", "CRAWLCYCLE_BATCH_SIZE": "20"}
    s = load_settings(cfg, overrides={"batch_size": "30"}, environ=env)
    assert (s.shards, s.min_delay, s.batch_size) == (5, 2.0, 30)
    assert with_overrides(s, {"batch_size": 40}).batch_size == 40


def test_relative_paths_resolve_against_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    cfg = tmp_path / "sub" / "c.toml"
    cfg.write_text('user_agent = "bot/1 (+http://e.org)"\ndb_path = "x/crawl.duckdb"\n')
    assert load_settings(cfg, environ={}).db_path == str(tmp_path / "sub" / "x" / "crawl.duckdb")


@pytest.mark.parametrize(("overrides", "message"), [
    ({"min_delay": "abc"}, "setting min_delay: expected float, got 'abc'"),
    ({"batch_size": 0}, "setting batch_size: must be at least 1"),
    ({"policy": "smartest"}, "setting policy: unknown policy 'smartest'"),
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
    assert capsys.readouterr().err.strip() == "crawlcycle: setting min_delay: expected float, got 'x'"
