"""The generated blocks of the documentation's pages (``crawlcycle.reference_pages``): the committed pages hold
what the code gives, and the check names a page that does not."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from crawlcycle import reference_pages
from crawlcycle.reference_pages import DOCS, PAGES


def _check(*pages: Path, columns: str) -> subprocess.CompletedProcess:
    """The check as ``--check`` runs it, in a terminal ``columns`` wide."""
    env = {**os.environ, "COLUMNS": columns}
    return subprocess.run([sys.executable, "-m", "crawlcycle.reference_pages", "--check", *map(str, pages)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_every_page_holds_its_blocks_whole() -> None:
    for name, blocks in PAGES.items():
        text = (DOCS / name).read_text()
        for block in blocks:
            assert text.count(f"<!-- {block} -->") == 1 and text.count(f"<!-- /{block} -->") == 1, (name, block)


def test_the_committed_pages_hold_what_the_code_generates() -> None:
    stale = [p.relative_to(DOCS.parent).as_posix() for p in reference_pages.stale(reference_pages.page_paths())]
    assert not stale, f"generated blocks differ from the code in {', '.join(stale)}: run `make reference`"


def test_the_check_names_a_page_whose_generated_row_was_altered(tmp_path: Path) -> None:
    """One row of a copied page edited by hand fails the check, which names that page only, in a narrow terminal as in a
    wide one; the untouched copy beside it passes."""
    settings, cli = tmp_path / "settings.md", tmp_path / "cli.md"
    shutil.copy(DOCS / "reference" / "settings.md", settings)
    shutil.copy(DOCS / "reference" / "cli.md", cli)
    text = settings.read_text()
    row = re.search(r"^\| `batch_size` \| `(\d+)` \|", text, flags=re.MULTILINE)
    assert row, "the settings page lists batch_size"
    settings.write_text(text.replace(row.group(0), row.group(0).replace(row.group(1), str(int(row.group(1)) + 1)), 1))

    for columns in ("40", "250"):
        res = _check(settings, cli, columns=columns)
        assert res.returncode == 1, res.stderr
        assert res.stderr.splitlines() == [f"{settings}: generated blocks differ from the code; run `make reference`"]
        assert _check(cli, columns=columns).returncode == 0

    # and regenerating puts the row back as the code has it
    assert reference_pages.regenerate([settings, cli]) == [settings]
    assert settings.read_text() == text
