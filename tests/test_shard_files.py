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


def spelled_outside(py_roots: list[Path], sql_roots: list[Path]) -> tuple[int, list[str]]:
    """(files read, each place a shard file's name is spelled) in the Python and SQL files under the roots, but
    shard_files itself; a SQL comment may name one."""
    found, read = [], 0
    for path in (p for d in py_roots for p in d.rglob("*.py")):
        if path == Path(shard_files.__file__):
            continue
        read += 1
        found += [f"{path}:{line}: {text!r}" for line, text in _code_strings(path) if SPELLED.search(text)]
    for path in (p for d in sql_roots for p in d.rglob("*.sql")):
        read += 1
        for line, text in enumerate(path.read_text().splitlines(), 1):
            code = text.split("--", 1)[0]
            if SPELLED.search(code):
                found.append(f"{path}:{line}: {code.strip()!r}")
    return read, found


def test_only_shard_files_spells_shard_file_names() -> None:
    assert {"urls.parquet", "responses.warc.gz", "fetch_log.parquet", "pages.parquet", "politeness.jsonl",
            "timing.json"} <= set(NAMES)
    sql_files = len(list((ROOT / "sql").rglob("*.sql")))
    read, found = spelled_outside([PACKAGE, ROOT / "dags", ROOT / "plugins"], [ROOT / "sql"])
    assert sql_files > 50 and read > sql_files  # the SQL lives under sql/: a scan of nothing would pass anything
    assert not found, "shard file names spelled outside shard_files (use its constants):\n" + "\n".join(found)


def test_a_name_spelled_in_sql_or_python_is_found(tmp_path: Path) -> None:
    (tmp_path / "sql" / "pipeline").mkdir(parents=True)
    (tmp_path / "sql" / "pipeline" / "planted.sql").write_text(
        "-- reads the shard's urls.parquet\nSELECT * FROM read_parquet($shard || '/urls.parquet');\n")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "planted.py").write_text('"""Writes timing.json."""\nNAME = "timing.json"\n')
    read, found = spelled_outside([tmp_path / "code"], [tmp_path / "sql"])
    assert read == 2 and [f.split(":", 2)[1] for f in found] == ["2", "2"], found
