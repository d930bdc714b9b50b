"""MkDocs hooks of the documentation site (mkdocs.yml, `hooks:`): what only the site needs.

- ``<!-- include FILE -->`` or ``<!-- include FILE#HEADING -->``: a file of the repository (a path from the root),
  whole or the section under one heading, is put in the page at build time.

The tables written from the code (settings, commands, ordering and refresh policies) are in the pages themselves,
between their markers (``crawlcycle.reference_pages``, ``make reference``), so the site shows them as they are.

The plots of the policy lab stay where ``bench/policies.py`` writes them (``bench/results/<snapshot>/curves.png``
and ``regret.png``) and are served as ``img/bench/<snapshot>/<name>.png``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
BENCH_RESULTS = ROOT / "bench" / "results"
_INCLUDE = re.compile(r"<!-- include ([\w./-]+)(?:#([^>]+?))? -->")


def section(text: str, heading: str) -> str:
    """The lines under the Markdown heading titled ``heading`` up to the next heading of its level or above."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+) (.*)$", line)
        if m and m.group(2).strip() == heading:
            level = len(m.group(1))
            end = next((j for j in range(i + 1, len(lines))
                        if (n := re.match(r"^(#+) ", lines[j])) and len(n.group(1)) <= level), len(lines))
            return "\n".join(lines[i + 1:end]).strip("\n") + "\n"
    raise ValueError(f"no heading {heading!r}")


def include(match: re.Match) -> str:
    text = (ROOT / match.group(1)).read_text()
    return section(text, match.group(2)) if match.group(2) else text


def render(markdown: str) -> str:
    """``markdown`` with every include marker replaced."""
    return _INCLUDE.sub(include, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return render(markdown)


def on_files(files: Files, config) -> Files:
    for plot in sorted(BENCH_RESULTS.glob("*/*.png")):
        files.append(File.generated(config, f"img/bench/{plot.parent.name}/{plot.name}", abs_src_path=str(plot)))
    return files
