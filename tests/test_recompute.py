"""What a refit computes again (setting recompute): several cycles of hybrid over three real sites of
../shared/corpus with the full recompute and with the changed-only one, and what differs between them."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from crawlcycle.evaluation.simulator import simulate
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT

CYCLES = 4
LOOSE = 5.0


@pytest.fixture(scope="module")
def crawls(three_sites: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The crawl databases of hybrid over the three sites: recompute full; changed as it ships; and changed with a
    drift bound loose enough (500 %) for a model to be kept on a crawl that grows this fast."""
    out, cache = tmp_path_factory.mktemp("recompute"), tmp_path_factory.mktemp("recompute-cache")
    ways = {"full": {"recompute": "full"}, "changed": {"recompute": "changed"},
            "loose": {"recompute": "changed", "refit_drift": LOOSE}}
    dbs = {}
    for name, overrides in ways.items():
        settings = load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": 40, "shards": 1,
                                                        **overrides})
        simulate(settings, [three_sites["warc"]], three_sites["queries"], three_sites["seeds"], ["hybrid"], CYCLES,
                 out / name, progress=lambda m: None, cache=cache)
        dbs[name] = out / name / "work" / "crawl.duckdb"
    return dbs


def _read(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _batches(db: Path) -> dict[int, list[str]]:
    rows = _read(db, "SELECT fetch_cycle, url FROM batches ORDER BY fetch_cycle, rank")
    return {c: [u for cc, u in rows if cc == c] for c in sorted({c for c, _ in rows})}


def _s_prime_runs(db: Path) -> list[tuple[int, dict, str | None]]:
    return [(c, json.loads(m), f) for c, m, f in
            _read(db, "SELECT cycle, metrics, file FROM model_runs WHERE model = 's_prime' ORDER BY cycle")]


def _first_kept(db: Path) -> int | None:
    return next((c for c, m, _ in _s_prime_runs(db) if "trained_cycle" in m), None)


@pytest.mark.parametrize("way", ["changed", "loose"])
def test_a_model_is_kept_only_while_its_held_out_error_stays_within_the_drift_bound(crawls: dict[str, Path],
                                                                                    way: str) -> None:
    bound, max_age = (LOOSE if way == "loose" else Settings.refit_drift), Settings.refit_max_age
    runs = _s_prime_runs(crawls[way])
    trained = {c: f for c, m, f in runs if f and "trained_cycle" not in m}
    kept = [(c, m, f) for c, m, f in runs if "trained_cycle" in m]
    for c, m, f in kept:
        assert 0 <= m["drift"] <= bound and 1 <= m["age"] < max_age, (c, m)
        assert f == trained[m["trained_cycle"]]  # the very file that was trained
        odds = _read(crawls[way], f"SELECT file FROM model_runs WHERE model = 'top_k_odds' AND cycle = {c}")
        assert odds[0][0].endswith(f"top_k_odds-{m['trained_cycle']:05d}.pkl")
    for c, m, _ in runs:  # every model trained after the first says why the one before was not kept
        if c in trained and c > min(trained):
            check = m["drift_check"]
            assert check["age"] >= max_age or check["drift"] > bound, (c, check)
    # the crawl grows several times over in these cycles: what S' learnt one cycle misses the next by far more than
    # the default bound, so only the loose one keeps a model
    assert bool(kept) == (way == "loose")
    # the full recompute trains in every cycle this one trained or kept
    assert len([r for r in _s_prime_runs(crawls["full"]) if r[2]]) == len(trained) + len(kept)


@pytest.mark.parametrize("way", ["changed", "loose"])
def test_batches_equal_the_full_recomputes_until_a_kept_model_scores_one(crawls: dict[str, Path], way: str) -> None:
    full, other = _batches(crawls["full"]), _batches(crawls[way])
    assert full.keys() == other.keys()
    first_kept = _first_kept(crawls[way]) or max(full)
    for cycle in full:  # the batch fetched in cycle c was scored in cycle c - 1, by that cycle's refit
        if cycle <= first_kept:
            assert other[cycle] == full[cycle], f"batch of cycle {cycle} differs before a model was kept"
    # a kept model reorders the frontier a little: the crawls stay close
    fetched = {w: set(_read(crawls[w], "SELECT url FROM pages")) for w in ("full", way)}
    assert len(fetched["full"] & fetched[way]) >= 0.8 * len(fetched["full"])
