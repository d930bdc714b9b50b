"""The documentation site (mkdocs.yml, docs/): it builds with warnings as errors, the tables written from the code
(settings, commands, policies) list what the code defines, and the tables copied into pages are the code's and the
benchmark's own."""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from crawlcycle import reference_pages
from crawlcycle.cli import build_parser, commands
from crawlcycle.contracts import refresh_policies
from crawlcycle.contracts.policies import REGISTRY
from crawlcycle.settings import SECTIONS, SETTING_NAMES, describe

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# What the hook replaces at build time; the generated blocks' markers are comments that stay in the pages.
MARKERS = ("<!-- include ",)


def _hooks():
    spec = importlib.util.spec_from_file_location("crawlcycle_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def page(name: str) -> str:
    return (DOCS / name).read_text()


def nav_pages() -> list[str]:
    """Every Markdown file the nav of mkdocs.yml names, in its order."""
    def walk(items) -> list[str]:
        found = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            found += walk(value) if isinstance(value, list) else [value]
        return found

    return walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])


def subcommands() -> dict[str, argparse.ArgumentParser]:
    return commands(build_parser())


def test_settings_table_lists_every_setting_with_its_default() -> None:
    assert "<!-- settings-table -->" in page("reference/settings.md")
    table = reference_pages.settings_table()
    # one table per section, under its TOML table's name, each holding exactly that section's settings
    parts = re.split(r"^### `\[(\w+)\]`$", table, flags=re.MULTILINE)
    assert parts[1::2] == list(SECTIONS)
    for section, text in zip(parts[1::2], parts[2::2], strict=True):
        rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", text, flags=re.MULTILINE)
        assert rows == [(n, repr(d)) for s, n, d, _ in describe() if s == section], section
        assert len(text.strip().splitlines()) == len(rows) + 2, f"a help text broke a row of [{section}]"


def test_command_reference_lists_every_subcommand_with_its_own_options_only() -> None:
    assert "<!-- cli-commands -->" in page("reference/cli.md")
    parts = re.split(r"^## `crawlcycle ([\w-]+)`$", reference_pages.cli_commands(), flags=re.MULTILINE)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    commands = subcommands()
    assert list(sections) == list(commands)
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for choice in sub._choices_actions:
        assert reference_pages.cell(choice.help) in sections[choice.dest], choice.dest
    for name, parser in commands.items():
        listed = re.findall(r"^\| `([\w-]+)", sections[name], flags=re.MULTILINE)
        # A command's own arguments: those not shared from the settings (a setting's flag keeps the setting's name).
        own = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
               if not isinstance(a, argparse._HelpAction) and a.dest not in (*SETTING_NAMES, "config")]
        assert listed == own, name
    assert "--snapshot" in sections["simulate"] and "--min-delay" not in sections["simulate"]


def test_policy_table_lists_every_registered_policy() -> None:
    assert "<!-- policy-table -->" in page("explanation/ordering.md")
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", reference_pages.policy_table(), flags=re.MULTILINE)
    assert rows == [(p.name, p.description) for p in REGISTRY]


def test_refresh_policy_table_lists_every_registered_refresh_policy() -> None:
    assert "<!-- refresh-policy-table -->" in page("explanation/refresh.md")
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", reference_pages.refresh_policy_table(), flags=re.MULTILINE)
    assert rows == [(p.name, p.description) for p in refresh_policies.REGISTRY]


def test_include_takes_the_section_under_one_heading() -> None:
    text = hooks.render("<!-- include ARCHITECTURE.md#Add an ordering policy -->")
    assert "`sql/ordering/policies/<name>.sql`" in text
    assert "Add a migration" not in text and "Add an ordering policy" not in text
    assert hooks.render("<!-- include ARCHITECTURE.md -->") == (ROOT / "ARCHITECTURE.md").read_text()


def test_gate_table_lists_every_check() -> None:
    from crawlcycle.quality.gate_suites import suites
    from crawlcycle.settings import Settings

    rows = re.findall(r"^\| (\w+) \| `(\w+)` \| (.+) \|$", page("explanation/quality-gates.md"), flags=re.MULTILINE)
    assert rows == [(g, c.name, c.meaning) for g, cs in suites(Settings()).items() for c in cs]


def test_policy_findings_shown_are_the_benchmark_s_own() -> None:
    """The tables of `make bench-policies` on the findings page are the ones its last run wrote, and its plots are
    shown."""
    findings = page("findings.md")
    results = sorted((ROOT / "bench" / "results").glob("*/findings.md"))
    assert {p.parent.name for p in results} == {"dev-docs", "py-web-docs", "sci-docs", "generated"}
    for path in [*results, ROOT / "bench" / "results" / "standing.md"]:
        rows = [line for line in path.read_text().splitlines() if line.startswith("| ")]
        assert rows and all(row in findings for row in rows), path
    for path in results:
        assert (path.parent / "curves.png").is_file(), path.parent
        assert f"](img/bench/{path.parent.name}/curves.png)" in findings, path.parent


def test_every_page_is_in_the_nav() -> None:
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav_pages()) == pages


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, capture_output=True, text=True, timeout=300)


def _html(site: Path, name: str) -> Path:
    return site / ("index.html" if name == "index.md" else f"{name.removesuffix('.md')}/index.html")


def test_the_site_builds_strict_with_every_page_and_the_generated_references(tmp_path: Path) -> None:
    site = tmp_path / "site"
    res = _build(ROOT / "mkdocs.yml", site)
    assert res.returncode == 0, res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    for name in nav_pages():
        assert _html(site, name).is_file(), name
    settings = _html(site, "reference/settings.md").read_text()
    for name in SETTING_NAMES:
        assert f"<td><code>{name}</code></td>" in settings, name
    cli = _html(site, "reference/cli.md").read_text()
    for name in subcommands():
        assert f"<code>crawlcycle {name}</code>" in cli, name
    ordering = _html(site, "explanation/ordering.md").read_text()
    for policy in REGISTRY:
        assert f"<td><code>{policy.name}</code></td>" in ordering, policy.name
    refresh = _html(site, "explanation/refresh.md").read_text()
    for policy in refresh_policies.REGISTRY:
        assert f"<td><code>{policy.name}</code></td>" in refresh, policy.name
    for plot in (ROOT / "bench" / "results").glob("*/curves.png"):
        assert (site / "img" / "bench" / plot.parent.name / "curves.png").read_bytes() == plot.read_bytes()
    for html in site.rglob("*.html"):
        text = html.read_text()
        assert not [m for m in MARKERS if m in text], html
    assert not list(site.rglob("*.py")), "the hook file is not part of the site"


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """Warnings are errors, and a link to a missing heading is one."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("ARCHITECTURE.md", "bench"):
        (root / name).symlink_to(ROOT / name)
    tutorial = root / "docs" / "tutorial.md"
    tutorial.write_text(tutorial.read_text() + "\nSee [nothing](reference/settings.md#no-such-heading).\n")
    res = _build(root / "mkdocs.yml", tmp_path / "site")
    assert res.returncode != 0
    assert "no-such-heading" in res.stderr, res.stderr
