"""The README is the user's manual: its quick start and settings table must match the code."""

import re
from pathlib import Path

from crawlcycle.settings import describe

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_settings_table_lists_every_setting_with_its_default() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", README, flags=re.MULTILINE))
    assert rows == {name: repr(default) for name, default, _ in describe()}


def test_quick_start_is_two_commands() -> None:
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]
    assert commands == ["make demo", "make test"]


def test_gate_table_lists_every_check() -> None:
    from crawlcycle.quality.gate_suites import suites
    from crawlcycle.settings import Settings

    rows = re.findall(r"^\| (\w+) \| `(\w+)` \| (.+) \|$", README, flags=re.MULTILINE)
    assert rows == [(g, c.name, c.meaning) for g, cs in suites(Settings()).items() for c in cs]


def test_policy_findings_shown_are_the_benchmark_s_own() -> None:
    """The tables of `make bench-policies` in the README are the ones its last run wrote."""
    results = sorted((Path(__file__).resolve().parents[1] / "bench" / "results").glob("*/findings.md"))
    assert {p.parent.name for p in results} == {"dev-docs", "py-web-docs", "sci-docs", "generated"}
    for path in results:
        rows = [line for line in path.read_text().splitlines() if line.startswith("| ")]
        assert rows and all(row in README for row in rows), path
