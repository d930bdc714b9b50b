"""The generated blocks of the documentation's pages: what the code defines, written into the Markdown so a page reads
whole wherever it is read (on the site, on GitHub, in an editor) and is never copied by hand.

A block sits between an opening and a closing marker, and a regeneration rewrites only what lies between them:

- ``<!-- settings-table -->`` … ``<!-- /settings-table -->``: every setting with its default and meaning, one table
  per section (``crawlcycle.settings.describe``), and whether a cycle runs with the value its begin recorded
  ("frozen") or each task reads it as it stands, and why (``crawlcycle.settings.LIVE``);
- ``<!-- cli-commands -->`` … ``<!-- /cli-commands -->``: every ``crawlcycle`` subcommand with its help line, its
  own options and the sections of the settings it takes (``crawlcycle.cli.build_parser``);
- ``<!-- policy-table -->`` … ``<!-- /policy-table -->``: every ordering policy of the registry
  (``crawlcycle.contracts.policies``);
- ``<!-- refresh-policy-table -->`` … ``<!-- /refresh-policy-table -->``: every refresh policy of its registry
  (``crawlcycle.contracts.refresh_policies``).

An opening marker without its closing one gets its block written after it.

``python -m crawlcycle.reference_pages`` (``make reference``) rewrites the blocks of every page of
``PAGES`` in place; with ``--check`` it writes nothing and exits 1 naming each page whose blocks differ from what the
code gives. Both take page paths instead of ``PAGES``.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# The pages holding generated blocks, and which blocks each holds.
PAGES = {"reference/settings.md": ("settings-table",), "reference/cli.md": ("cli-commands",),
         "explanation/ordering.md": ("policy-table",), "explanation/refresh.md": ("refresh-policy-table",)}
# argparse wraps what it formats to the terminal's width (COLUMNS); a page must not depend on where it was written.
WIDTH = "100"
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
    """A section per subcommand: its help line, the sections of settings it takes as flags, its own arguments."""
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
    """The ordering policies, in the registry's order."""
    from crawlcycle.contracts.policies import REGISTRY

    rows = [f"| `{p.name}` | {p.description} |" for p in REGISTRY]
    return "\n".join(["| policy | orders the frontier by |", "|---|---|", *rows])


def refresh_policy_table() -> str:
    """The refresh policies, in their registry's order."""
    from crawlcycle.contracts.refresh_policies import REGISTRY

    rows = [f"| `{p.name}` | {p.description} |" for p in REGISTRY]
    return "\n".join(["| policy | refreshes |", "|---|---|", *rows])


BLOCKS: dict[str, Callable[[], str]] = {"settings-table": settings_table, "cli-commands": cli_commands,
                                        "policy-table": policy_table, "refresh-policy-table": refresh_policy_table}


@contextlib.contextmanager
def fixed_width() -> Iterator[None]:
    """COLUMNS set to ``WIDTH`` while the blocks are made, as it was after."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def block(name: str) -> str:
    """The block ``name`` with its markers; blank lines around the content keep Markdown from reading it as part of
    the comments."""
    with fixed_width():
        content = BLOCKS[name]().strip("\n")
    return f"<!-- {name} -->\n\n{content}\n\n<!-- /{name} -->"


def render(markdown: str) -> str:
    """``markdown`` with every block it holds made anew from the code, and nothing else changed."""
    for name in BLOCKS:
        pattern = re.compile(rf"<!-- {re.escape(name)} -->(?:.*?<!-- /{re.escape(name)} -->)?", re.DOTALL)
        # joined, not substituted: the block's backslashes (escaped cells) must not be read as group references
        parts = pattern.split(markdown)
        if len(parts) > 1:
            markdown = block(name).join(parts)
    return markdown


def page_paths() -> list[Path]:
    """The files of ``PAGES``."""
    return [DOCS / name for name in PAGES]


def stale(paths: Sequence[Path]) -> list[Path]:
    """The pages of ``paths`` whose blocks differ from what the code gives."""
    return [p for p in paths if render(text := p.read_text()) != text]


def regenerate(paths: Sequence[Path]) -> list[Path]:
    """Rewrite the blocks of ``paths`` in place; the pages that changed (the others are not touched)."""
    changed = []
    for path in paths:
        text = path.read_text()
        made = render(text)
        if made != text:
            path.write_text(made)
            changed.append(path)
    return changed


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(Path.cwd()))
    return str(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crawlcycle.reference_pages",
                                     description="Write the generated blocks of the documentation's pages.")
    parser.add_argument("pages", nargs="*", type=Path, help="pages to handle (default: every page that holds blocks)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming each page whose blocks differ from the code's")
    args = parser.parse_args(argv)
    paths = args.pages or page_paths()
    try:
        if args.check:
            differ = stale(paths)
            for path in differ:
                print(f"{_shown(path)}: generated blocks differ from the code; run `make reference`", file=sys.stderr)
            return 1 if differ else 0
        for path in regenerate(paths):
            print(f"rewrote {_shown(path)}")
    except OSError as e:
        print(f"{e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
