"""The shard folder contract has one home: no code but ``shard_files`` spells a shard file's name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import crawlcycle
from crawlcycle.contracts import shard_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(crawlcycle.__file__).parent
NAMES = sorted(v for k, v in vars(shard_files).items() if k.isupper() and isinstance(v, str))
# A name on its own: "urls.parquet" inside "sitemap_urls.parquet" is not a use of it.
SPELLED = re.compile("|".join(rf"(?<![\w.-]){re.escape(n)}" for n in NAMES))


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a Python file (f-string parts included), docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_only_shard_files_spells_shard_file_names() -> None:
    assert {"urls.parquet", "responses.warc.gz", "fetch_log.parquet", "pages.parquet", "politeness.jsonl",
            "timing.json"} <= set(NAMES)
    found = []
    sources = [p for d in (PACKAGE, ROOT / "dags", ROOT / "plugins") for p in d.rglob("*.py")]
    for path in sources:
        if path == Path(shard_files.__file__):
            continue
        found += [f"{path.relative_to(ROOT)}:{line}: {text!r}" for line, text in _code_strings(path)
                  if SPELLED.search(text)]
    for path in PACKAGE.rglob("*.sql"):
        for line, text in enumerate(path.read_text().splitlines(), 1):
            code = text.split("--", 1)[0]
            if SPELLED.search(code):
                found.append(f"{path.relative_to(ROOT)}:{line}: {code.strip()!r}")
    assert not found, "shard file names spelled outside shard_files (use its constants):\n" + "\n".join(found)
