"""MkDocs hooks of the documentation site (mkdocs.yml, `hooks:`).

Pages hold markers that are replaced at build time, so what the code defines is never copied by hand:

- ``<!-- settings-table -->``: every setting with its default and meaning, one table per section
  (``crawlcycle.settings.describe``), and whether a cycle runs with the value its begin recorded ("frozen") or each
  task reads it as it stands, and why (``crawlcycle.settings.LIVE``);
- ``<!-- cli-commands -->``: every ``crawlcycle`` subcommand with its help line, its own options and the sections
  of the settings it takes (``crawlcycle.cli.build_parser``);
- ``<!-- policy-table -->``: every ordering policy of the registry (``crawlcycle.contracts.policies``);
- ``<!-- refresh-policy-table -->``: every refresh policy of its registry (``crawlcycle.contracts.refresh_policies``);
- ``<!-- include FILE -->`` or ``<!-- include FILE#HEADING -->``: a file of the repository (a path from the root),
  whole or the section under one heading.

The plots of the policy lab stay where ``bench/policies.py`` writes them (``bench/results/<snapshot>/curves.png``
and ``regret.png``) and are served as ``img/bench/<snapshot>/<name>.png``.
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
BENCH_RESULTS = ROOT / "bench" / "results"
_INCLUDE = re.compile(r"<!-- include ([\w./-]+)(?:#([^>]+?))? -->")
_CODE_SPAN = re.compile(r"(`[^`]*`)")


def cell(text: str) -> str:
    """``text`` safe in a Markdown table cell: code spans kept, elsewhere HTML and Markdown syntax escaped."""
    parts = _CODE_SPAN.split(text)
    for i in range(0, len(parts), 2):
        escaped = html.escape(parts[i], quote=False)
        parts[i] = re.sub(r"([\\*_\[\]|])", r"\\\1", escaped)
    return "".join(parts)


def settings_table() -> str:
    """One table per section, under a heading naming its TOML table."""
    from crawlcycle.settings import LIVE, SECTIONS, describe

    out = []
    for name in SECTIONS:
        rows = [f"| `{setting}` | `{default!r}` | {'live: ' + LIVE[setting] if setting in LIVE else 'frozen'} | "
                f"{cell(help_text)} |" for section, setting, default, help_text in describe() if section == name]
        out += [f"### `[{name}]`", "", "| setting | default | in a cycle | meaning |", "|---|---|---|---|", *rows, ""]
    return "\n".join(out)


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, help line, parser) of every subcommand, in the parser's order."""
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {a.dest: a.help for a in sub._choices_actions}
    return [(name, helps[name], p) for name, p in sub.choices.items()]


def own_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments of a subcommand but ``--help``, ``--config`` and the settings flags."""
    from crawlcycle.settings import SETTING_NAMES

    return [a for a in parser._actions if a.dest not in (*SETTING_NAMES, "config")
            and not isinstance(a, argparse._HelpAction)]


def _spelling(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    name = ", ".join(action.option_strings)
    if action.nargs == 0:
        return name
    if action.choices:
        return f"{name} {{{','.join(map(str, action.choices))}}}"
    metavar = action.metavar or action.dest.upper()
    return f"{name} {metavar} [{metavar} ...]" if action.nargs == "+" else f"{name} {metavar}"


def cli_commands() -> str:
    from crawlcycle.cli import build_parser

    out = []
    for name, help_text, parser in subcommands(build_parser()):
        out += [f"## `crawlcycle {name}`", "", cell(help_text) + ".", ""]
        sections = [g.title.split()[0] for g in parser._action_groups if (g.title or "").startswith("[")]
        out += [("Settings flags of the sections " + ", ".join(f"`{s}`" for s in sections) if sections
                 else "No settings flags") + " (`--help` lists them).", ""]
        options = own_options(parser)
        if options:
            out += ["| argument | meaning |", "|---|---|"]
            for action in options:
                text = action.help or ""
                if action.choices and not action.option_strings:
                    text += f" (one of {', '.join(map(str, action.choices))})"
                if action.required and action.option_strings:
                    text += "; required"
                out.append(f"| `{_spelling(action)}` | {cell(text)} |")
            out.append("")
        else:
            out += ["No arguments of its own.", ""]
    return "\n".join(out).rstrip() + "\n"


def policy_table() -> str:
    from crawlcycle.contracts.policies import REGISTRY

    rows = [f"| `{p.name}` | {p.description} |" for p in REGISTRY]
    return "\n".join(["| policy | orders the frontier by |", "|---|---|", *rows])


def refresh_policy_table() -> str:
    from crawlcycle.contracts.refresh_policies import REGISTRY

    rows = [f"| `{p.name}` | {p.description} |" for p in REGISTRY]
    return "\n".join(["| policy | refreshes |", "|---|---|", *rows])


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


MARKERS = {"<!-- settings-table -->": settings_table, "<!-- cli-commands -->": cli_commands,
           "<!-- policy-table -->": policy_table, "<!-- refresh-policy-table -->": refresh_policy_table}


def render(markdown: str) -> str:
    """``markdown`` with every marker replaced."""
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return _INCLUDE.sub(include, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return render(markdown)


def on_files(files: Files, config) -> Files:
    for plot in sorted(BENCH_RESULTS.glob("*/*.png")):
        files.append(File.generated(config, f"img/bench/{plot.parent.name}/{plot.name}", abs_src_path=str(plot)))
    return files
