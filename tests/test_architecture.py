"""The package's shape: which parts may import which, read from the sources' import statements."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "include" / "crawlcycle"
# Apart from the product: the demo harness and the evaluation lab. Only the command line (which offers `demo`
# and `simulate`) reaches into them.
HARNESS = ("devtools", "evaluation")


def imports(path: Path) -> set[str]:
    """Every crawlcycle module ``path`` imports, at any depth of the file (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.startswith("crawlcycle")}


def product_files() -> list[Path]:
    files = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in HARNESS]
    files = [p for p in files if p != PACKAGE / "cli.py"]
    return files + sorted((ROOT / "dags").glob("*.py")) + sorted((ROOT / "plugins").glob("*.py"))


def test_the_product_imports_neither_the_harness_nor_the_evaluation_lab() -> None:
    files = product_files()
    assert len(files) > 40 and PACKAGE / "pipeline" / "stages.py" in files
    wrong = {f"{p.relative_to(ROOT)} imports {m}" for p in files for m in imports(p)
             if m.count(".") and m.split(".")[1] in HARNESS}
    assert not wrong, sorted(wrong)


def test_the_pipeline_does_not_import_the_ui() -> None:
    wrong = {f"{p.relative_to(ROOT)} imports {m}" for p in (PACKAGE / "pipeline").rglob("*.py")
             for m in imports(p) if m.startswith("crawlcycle.ui")}
    assert not wrong, sorted(wrong)


def test_every_module_lives_in_a_subpackage_but_the_entry_points() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "cli.py", "db.py", "reference_pages.py"]


def unit(module: str) -> str:
    """The part of the package a module belongs to: its subpackage, or the top-level module itself."""
    return module.split(".")[1]


def import_graph() -> dict[str, set[str]]:
    """Which parts of the package import which (a part's imports of itself left out)."""
    graph: dict[str, set[str]] = {}
    for p in PACKAGE.rglob("*.py"):
        rel = p.relative_to(PACKAGE)
        src = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        units = {unit(m) for m in imports(p) if m.count(".")}
        graph.setdefault(src, set()).update(u for u in units
                                            if u != src and ((PACKAGE / u).is_dir() or (PACKAGE / f"{u}.py").exists()))
    return graph


def test_no_two_parts_of_the_package_import_each_other_even_through_others() -> None:
    graph = import_graph()
    assert {"pipeline", "fetch", "contracts", "settings"} <= graph.keys()

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            for n in graph.get(todo.pop(), ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    cycles = sorted(f"{a} <-> {b}" for a in graph for b in graph[a] if reaches(b, a))
    assert not cycles, cycles


def test_the_contracts_are_the_bottom_layer() -> None:
    graph = import_graph()
    assert graph["contracts"] == set() and graph["settings"] == {"contracts"}, (graph["contracts"], graph["settings"])


def test_paths_the_docs_name_exist() -> None:
    """Every file or folder of the project that README.md, ARCHITECTURE.md and the pages of the documentation site
    (docs/**/*.md) name in backticks exists, from the project root or from the package (``pipeline/stages.py``,
    ``sql/...``), so the docs follow the code when it moves. Names under folders the project does not hold (run
    outputs such as ``data/``, ``sim/``) are not its, nor files the user writes that git ignores (``docker/.env``)."""
    bases = (ROOT, PACKAGE)
    ignored = {line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()}
    docs = ["README.md", "ARCHITECTURE.md",
            *sorted(page.relative_to(ROOT).as_posix() for page in (ROOT / "docs").rglob("*.md"))]
    assert len(docs) > 10
    missing = []
    for doc in docs:
        for name in re.findall(r"`([\w./-]+/[\w.-]*)`", (ROOT / doc).read_text()):
            if name.startswith(("../", "/", "http")) or "://" in name or not re.search(r"\.\w+$|/$", name):
                continue
            first = name.split("/")[0]
            if first == "data" or name in ignored or not any((base / first).is_dir() for base in bases):
                continue
            if not any((base / name).exists() for base in bases):
                missing.append(f"{doc}: {name}")
    assert not missing, missing


# Policies are run by the registry, not by a module named like their folder.
SQL_RUNNERS = {"ordering/policies": "ordering/registry.py", "migrations": "db.py", "views": "db.py"}


def test_sql_folders_mirror_the_modules_that_run_them() -> None:
    """sql/<package>/<module>/<name>.sql is run by crawlcycle/<package>/<module>.py, which names the file or its
    folder (f"quality/gates/{stage}/{name}"); sql/<package>/<name>.sql is shared by modules of the package."""
    sql = ROOT / "sql"
    files = sorted(sql.rglob("*.sql"))
    assert len(files) > 100
    for path in files:
        rel = path.relative_to(sql)
        stem, folder = rel.with_suffix("").as_posix(), rel.parent.as_posix()
        runner = next((PACKAGE / r for f, r in SQL_RUNNERS.items() if folder == f or folder.startswith(f + "/")),
                      None)
        if runner is None and len(rel.parts) == 2:
            assert (PACKAGE / folder).is_dir(), f"sql/{rel}: no package crawlcycle.{folder}"
            continue
        runner = runner or PACKAGE / rel.parts[0] / f"{rel.parts[1]}.py"
        assert runner.is_file(), f"sql/{rel}: no module {runner.relative_to(PACKAGE)} runs it"
        text = runner.read_text()
        prefixes = ["/".join(rel.parts[:n]) for n in range(1, len(rel.parts))]
        assert f'"{stem}"' in text or any(f'"{p}/' in text for p in prefixes), \
            f"sql/{rel}: {runner.relative_to(PACKAGE)} does not name it"
