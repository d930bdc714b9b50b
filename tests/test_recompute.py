"""What the ordering stages compute again each cycle, on several cycles of hybrid over three real sites of
../shared/corpus: a refit with the full recompute and with the changed-only one (setting recompute), and what
differs between them; materialize's candidates read from the best scored URLs only, and the batch they give."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from crawlcycle.contracts.cycles import batch_cycles
from crawlcycle.db import connect, scalar
from crawlcycle.fetch.robots import stored_robots
from crawlcycle.pipeline import materialize
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import from_record, load_settings
from tests.support.demo import USER_AGENT
from tests.support.three_sites import THREE_SITE_CYCLES, simulate_three_sites

CYCLES = THREE_SITE_CYCLES
LOOSE = 5.0
SHIPPED_PREFIX = materialize.PREFIX_BATCHES


@pytest.fixture(scope="module")
def crawls(three_sites: dict[str, Path], three_site_crawl: Path, tmp_path_factory: pytest.TempPathFactory
           ) -> dict[str, Path]:
    """The crawl databases of hybrid over the three sites: recompute changed as it ships (the shared crawl); full;
    and changed with a drift bound loose enough (five times the scores' spread) for a model to be kept on a crawl
    that grows this fast."""
    out = tmp_path_factory.mktemp("recompute")
    return {"changed": three_site_crawl,
            **{name: simulate_three_sites(three_sites, out / name, CYCLES, **overrides) for name, overrides in
               (("full", {"recompute": "full"}), ("loose", {"recompute": "changed", "refit_drift": LOOSE}))}}


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
        assert m["drift"] <= bound and 1 <= m["age"] < max_age, (c, m)
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


@pytest.mark.parametrize("batches", [1, SHIPPED_PREFIX, 2 * SHIPPED_PREFIX])
def test_candidates_read_from_the_best_scored_urls_give_the_batch_the_whole_frontier_gives(
        crawls: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: int) -> None:
    got = {}
    for prefix in (batches, 10 ** 6):  # the prefix of the best `batches` batches' worth, and every scored URL
        folder = tmp_path / str(prefix)
        folder.mkdir()
        shutil.copy(crawls["full"], folder / "crawl.duckdb")
        live = load_settings(environ={}, overrides={"db_path": str(folder / "crawl.duckdb"),
                                                    "data_dir": str(folder), "user_agent": USER_AGENT})
        monkeypatch.setattr(materialize, "PREFIX_BATCHES", prefix)
        with connect(live) as con:
            settings = from_record(json.loads(scalar(con, "SELECT settings FROM cycles WHERE cycle = ?", [CYCLES])),
                                   live)
            scored = scalar(con, "SELECT count(*) FROM frontier_scores WHERE score_cycle = ?", [CYCLES])
            cand, _ = materialize.candidates(con, settings, stored_robots(con, settings), *batch_cycles(score=CYCLES),
                                             settings.batch_size)
            batch = materialize.materialize(con, settings, CYCLES)
            got[prefix] = (cand.height, batch.select("url", "kind", "rank").rows())
    assert scored > batches * settings.batch_size  # a prefix is a part of the scored URLs
    assert got[batches][1] == got[10 ** 6][1] and len(got[batches][1]) == settings.batch_size
    # the best batch's worth holds too few allowed URLs of origins that answered, so the whole frontier is read;
    # the shipped prefix fills the batch from fewer candidates
    assert (got[batches][0] < got[10 ** 6][0]) == (batches >= SHIPPED_PREFIX)
