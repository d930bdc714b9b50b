"""The README is the newcomer's page: two set-up commands, then the way into the documentation site. What it
used to hold (the settings table, the gate table, the policy findings) is checked where it now lives, in
tests/test_docs.py."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_quick_start_is_two_commands() -> None:
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]
    assert commands == ["make demo", "make test"]


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    targets = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README) if "://" not in t]
    assert targets
    assert not [t for t in targets if not (ROOT / t).exists()]


def test_the_readme_leads_to_every_page_of_the_site_and_how_to_read_it() -> None:
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)\)", README))
    assert linked == {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert "make docs-serve" in README
