"""The policy registry is the one list of ordering policies: every entry has its SQL and its staging function,
the settings name exactly its policies (the documentation's table is written from it: tests/test_reference_pages.py),
and a cycle's rollback clears the state they own."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlcycle.contracts.policies import NAMES, REFERENCE, REFERENCE_NAMES, REGISTRY
from crawlcycle.db import SQL_DIR, connect, statements
from crawlcycle.ordering import registry
from crawlcycle.pipeline import update
from crawlcycle.settings.sources import load_settings
from tests.support.crawl_state import new_state
from tests.support.demo import USER_AGENT

BASE = {"user_agent": USER_AGENT}


def test_every_policy_has_one_sql_statement_and_every_policy_sql_file_an_entry() -> None:
    names = NAMES + REFERENCE_NAMES
    assert sorted(p.stem for p in (SQL_DIR / "ordering" / "policies").glob("*.sql")) == sorted(names)
    assert len(set(names)) == len(names)
    for entry in REGISTRY + REFERENCE:
        assert len(statements(entry.sql)) == 1, entry.name


def test_every_staging_function_resolves() -> None:
    for entry in REGISTRY + REFERENCE:
        stage = registry.stage_function(entry)
        assert (stage is None) == (entry.stage == ""), entry.name
        if stage:
            assert callable(stage) and entry.stage.endswith(f":{stage.__name__}"), entry.name


def test_the_policy_setting_takes_the_registry_s_policies_only() -> None:
    for name in NAMES:
        assert load_settings(overrides={**BASE, "policy": name}, environ={}).policy == name
    with pytest.raises(ValueError, match=f"setting policy: choose one of {', '.join(NAMES)}, got 'fifo'"):
        load_settings(overrides={**BASE, "policy": "fifo"}, environ={})
    # the simulator's reference ordering reads the true impact only the simulator writes: no crawl runs it
    with pytest.raises(ValueError, match="setting policy: oracle is the simulator's reference ordering"):
        load_settings(overrides={**BASE, "policy": "oracle"}, environ={})


def test_a_cycle_s_rollback_clears_the_state_every_policy_owns(tmp_path: Path) -> None:
    s = new_state(tmp_path, "opic")
    with connect(s) as con:
        tables = registry.owned_tables()
        assert {"opic_cash", "sketches"} <= set(tables)
        for table in tables:
            columns = con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                                  "ORDER BY column_index", [table]).fetchall()
            assert ("cycle", "INTEGER") in columns, table
            for cycle in (1, 2):
                values = ", ".join(str(cycle) if c == "cycle" else f"CAST(0 AS {kind})" for c, kind in columns)
                con.execute(f"INSERT INTO {table} VALUES ({values})")
        update.merge_shards(con, s, 2, [])  # the update stage of cycle 2 again, here with no shard output
        for table in tables:
            assert con.execute(f"SELECT cycle FROM {table}").fetchall() == [(1,)], table
