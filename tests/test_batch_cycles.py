"""A batch's score cycle and fetch cycle have one conversion (``contracts.cycles``): Python calls batch_cycles, SQL
its macros, and no other code adds or subtracts one from a cycle."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crawlcycle.contracts import cycles
from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import connect, migrate
from crawlcycle.settings.sources import load_settings

ROOT = Path(__file__).resolve().parents[1]
ARITHMETIC = re.compile(r"\b\w*cycle\b\s*[+-]\s*1\b")


def cycle_arithmetic(roots: list[Path]) -> tuple[int, list[str]]:
    """(files read, each line of a Python or SQL file under ``roots`` that adds or subtracts one from a cycle), the
    contract itself and the migrations (history, as it ran) aside."""
    found, read = [], 0
    for path in sorted(p for root in roots for p in root.rglob("*") if p.suffix in (".py", ".sql")):
        if path == Path(cycles.__file__) or "migrations" in path.parts:
            continue
        read += 1
        found += [f"{path}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
                  if ARITHMETIC.search(line)]
    return read, found


def test_the_conversion_and_its_macros_agree(tmp_path: Path) -> None:
    assert batch_cycles(score=3) == (3, 4) == batch_cycles(fetch=4)
    for given in ({}, {"score": 1, "fetch": 2}):
        with pytest.raises(ValueError, match="one of them"):
            batch_cycles(**given)
    settings = load_settings(overrides={"db_path": str(tmp_path / "crawl.duckdb")}, environ={})
    with connect(settings) as con:
        migrate(con)
        assert con.execute("SELECT fetch_cycle_of(3), score_cycle_of(4)").fetchall() == [(4, 3)]


def test_no_code_adds_or_subtracts_one_from_a_cycle_but_the_contract() -> None:
    read, found = cycle_arithmetic([ROOT / "include", ROOT / "dags", ROOT / "plugins", ROOT / "sql"])
    assert read > 200 and not found, "use contracts.cycles (batch_cycles, or fetch_cycle_of / score_cycle_of in " \
                                     "SQL):\n" + "\n".join(found)


def test_a_planted_conversion_is_found(tmp_path: Path) -> None:
    (tmp_path / "planted.sql").write_text("SELECT * FROM batches WHERE fetch_cycle = $cycle + 1\n")
    (tmp_path / "planted.py").write_text("def next_batch(score_cycle: int) -> int:\n    return score_cycle+1\n")
    read, found = cycle_arithmetic([tmp_path])
    assert read == 2 and [f.rsplit(":", 2)[-2] for f in found] == ["2", "1"], found
