"""The README is the newcomer's front door: what crawlcycle is, two set-up commands, where to go for a crawl of one's
own sites, and the way into the documentation site. What it used to hold (the settings, gate and policy tables, the
policy and refresh findings, the container recipe) is checked where it now lives, in tests/test_docs.py and
tests/test_readme_commands.py."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LINKED = re.findall(r"\]\((docs/[^)#]+\.md)\)", README)


def test_quick_start_is_two_commands() -> None:
    block = README.split("## Quick start", 1)[1].split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip() and not line.startswith("#")]
    assert commands == ["make demo", "make test"]


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 125
    headings = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)
    assert headings == ["Quick start", "Crawl your own sites", "The Airflow UI", "Ordering policies",
                        "Refresh policies", "Scaling out", "With Docker", "Documentation"]
    assert "docs/howto/your-own-crawl.md" in README.split("## Crawl your own sites", 1)[1].split("\n## ", 1)[0]


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    targets = [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README) if "://" not in t]
    assert targets
    assert not [t for t in targets if not (ROOT / t).exists()]


def test_the_readme_leads_to_every_page_of_the_site_and_how_to_read_it() -> None:
    assert {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")} <= set(LINKED)
    documentation = README.split("## Documentation", 1)[1]
    howtos = [t for t in re.findall(r"\]\((docs/[^)#]+\.md)\)", documentation) if t.startswith("docs/howto/")]
    assert howtos[0] == "docs/howto/your-own-crawl.md"
    assert "make docs-serve" in README
