"""The offline simulator on real documentation sites cut from ../shared/corpus/dev-docs.warc.gz, with real
web-search queries (CodeSearchNet) whose frequencies are synthetic: Zipf, f(rank) = round(100 / rank)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from crawlcycle.cli import main
from crawlcycle.evaluation.simulator import BUDGETS, ENGAGEMENT, engagement_text, simulate
from crawlcycle.settings import POLICIES, Settings, load_settings
from tests.support.demo import USER_AGENT
from tests.support.snapshot_cut import cut

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _queries(csn: Path, path: Path, n: int) -> Path:
    lines = csn.read_text().splitlines()[1:n + 1]
    path.write_text("".join(f"{q}\t{round(100 / rank)}\n" for rank, q in enumerate(lines, 1)))
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, shared: Path, dev_docs: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sim-inputs")
    seeds = d / "seeds.txt"
    seeds.write_text("http://sphinx.docs.test/contents.html\nhttp://requests.docs.test/index.html\n")
    # Two sites, one of them in part (its usage and tutorial sections): links out of the cut answer 404.
    sphinx = tuple(f"http://sphinx.docs.test/{part}" for part in ("usage/", "tutorial/", "index", "contents",
                                                                  "robots.txt"))
    return {"docs": cut(dev_docs, ("http://requests.docs.test/", *sphinx), d / "docs.warc.gz"),
            "small": cut(dev_docs, ("http://requests.docs.test/",), d / "small.warc.gz"),
            "queries": _queries(shared / "queries" / "csn_queries.csv", d / "queries.tsv", 20), "seeds": seeds}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sim-cache")


@pytest.fixture(scope="module")
def two_policies(inputs: dict[str, Path], cache: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> tuple[Path, dict]:
    """bfs and hybrid side by side (jobs=2)."""
    out = tmp_path_factory.mktemp("sim-out")
    summaries = simulate(_settings(), [inputs["docs"]], inputs["queries"], inputs["seeds"], ["bfs", "hybrid"], 3,
                         out, progress=lambda m: None, jobs=2, cache=cache)
    return out, summaries


def _settings(**overrides: object) -> Settings:
    return load_settings(environ={}, overrides={"user_agent": USER_AGENT, "batch_size": 12, "shards": 1,
                                                **overrides})


@pytest.mark.parametrize("policy", ["bfs", "hybrid"])
def test_order_lists_each_fetched_url_once_in_fetch_order(two_policies: tuple[Path, dict], policy: str) -> None:
    out, _ = two_policies
    with (out / policy / "order.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["url", "cycle", "rank"]
    urls = [r["url"] for r in rows]
    assert len(urls) == len(set(urls)) > 12
    keys = [(int(r["cycle"]), int(r["rank"])) for r in rows]
    assert keys == sorted(keys) and {c for c, _ in keys} == {1, 2, 3}
    with duckdb.connect(str(out / policy / "work" / "crawl.duckdb"), read_only=True) as con:
        logged = con.execute("SELECT l.url FROM fetch_log l JOIN batches b ON b.fetch_cycle = l.cycle "
                             "AND b.url = l.url WHERE l.outcome NOT IN ('deferred', 'disallowed') "
                             "ORDER BY l.cycle, b.rank").fetchall()
    assert urls == list(dict.fromkeys(u for (u,) in logged))  # a URL tried again later keeps its first place
    # Every URL came from the snapshot: a record of it, or a link found in one of its pages.
    truth = Path(json.loads((out / "truth.json").read_text())["folder"])
    with duckdb.connect(str(truth / "truth.duckdb"), read_only=True) as con:
        known = {u for (u,) in con.execute("SELECT url FROM frontier").fetchall()}
    assert set(urls) <= known


@pytest.mark.parametrize("policy", ["bfs", "hybrid"])
def test_curve_and_summary(two_policies: tuple[Path, dict], policy: str) -> None:
    out, summaries = two_policies
    points = pl.read_csv(out / policy / "curve.csv")
    assert points.columns == ["fetched", "fraction", "policy", "ideal", "policy_bm25s", "ideal_bm25s", "p_cs",
                              "p_st"]
    for judged, ideal in (("policy", "ideal"), ("policy_bm25s", "ideal_bm25s")):
        assert (points[ideal] >= points[judged] - 1e-12).all()
        assert points[judged].is_sorted() and points[ideal].is_sorted()
        assert points[judged][-1] > 0  # the crawl found pages that answer the workload, by either judge
    assert points["p_st"].is_sorted()
    summary = json.loads((out / policy / "summary.json").read_text())
    assert summary == json.loads(json.dumps(summaries[policy]))
    assert summary["snapshot_pages"] > 80 and summary["hot_pages"] == -(-summary["snapshot_pages"] // 10)
    assert summary["budgets"] == summary["budgets_by_judge"]["reference"]
    for budget in BUDGETS:
        for judge, suffix in (("reference", ""), ("bm25s", "_bm25s")):
            values = summary["budgets_by_judge"][judge][f"{budget:.0%}"]
            assert all(0 <= values[k] <= 1 for k in ("pct_of_ideal", "p_cs", "p_st"))
            row = points.row(values["fetches"] - 1, named=True)
            assert values["pct_of_ideal"] == pytest.approx(row[f"policy{suffix}"] / row[f"ideal{suffix}"])
    assert summary["seconds"] > 0
    assert (out / policy / "curve.png").read_bytes()[:8] == PNG_MAGIC


def test_summary_holds_each_cycle_s_query_engagement(two_policies: tuple[Path, dict]) -> None:
    out, summaries = two_policies
    for policy in ("bfs", "hybrid"):
        engagement = json.loads((out / policy / "summary.json").read_text())["engagement"]
        with duckdb.connect(str(out / policy / "work" / "crawl.duckdb"), read_only=True) as con:
            rows = con.sql(f"SELECT cycle, {', '.join(ENGAGEMENT)} FROM v_cycle_summary ORDER BY cycle").pl()
        assert engagement["cycles"] == rows.to_dicts() and rows["cycle"].to_list() == [1, 2, 3]
        # three cycles: the means from cycle 3 on are cycle 3's figures
        assert engagement["mean_from_cycle_3"] == {k: v for k, v in engagement["cycles"][2].items() if k != "cycle"}
    hybrid = summaries["hybrid"]["engagement"]["cycles"]
    assert all(c[k] is not None for c in hybrid for k in ENGAGEMENT)
    assert all(c[k] is None for c in summaries["bfs"]["engagement"]["cycles"] for k in ENGAGEMENT[1:])
    assert "batch query share" in engagement_text(summaries["hybrid"])
    assert engagement_text(summaries["bfs"]).endswith("batch query share n/a, mass n/a (means of cycles>=3)")


def test_policy_all_runs_every_policy_and_draws_them_together(inputs: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    code = main(["simulate", "--snapshot", str(inputs["small"]), "--queries", str(inputs["queries"]),
                 "--seeds", str(inputs["seeds"]), "--policy", "all", "--batch-size", "6", "--cycles", "1",
                 "--out", str(tmp_path / "out"), "--user-agent", USER_AGENT, "--shards", "1",
                 "--data-dir", str(tmp_path / "data")])
    assert code == 0
    printed = capsys.readouterr().out
    for policy in POLICIES:
        assert all((tmp_path / "out" / policy / name).is_file() for name in ("order.csv", "curve.png"))
        assert f"{policy}: cycle 1/1 done" in printed
    assert (tmp_path / "data" / "simulation-cache" / "parse.sqlite").is_file()
    assert (tmp_path / "out" / "curves.png").read_bytes()[:8] == PNG_MAGIC


def test_missing_snapshot_is_a_one_line_error(inputs: dict[str, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture) -> None:
    missing = tmp_path / "nowhere.warc.gz"
    code = main(["simulate", "--snapshot", str(missing), "--queries", str(inputs["queries"]),
                 "--seeds", str(inputs["seeds"]), "--policy", "bfs", "--out", str(tmp_path / "out"),
                 "--user-agent", USER_AGENT, "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and str(missing) in err
    assert not (tmp_path / "out").exists()


def test_without_out_a_run_gets_its_own_folder_under_data_dir(inputs: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    code = main(["simulate", "--snapshot", str(inputs["small"]), "--queries", str(inputs["queries"]),
                 "--seeds", str(inputs["seeds"]), "--policy", "bfs", "--batch-size", "6", "--cycles", "1",
                 "--data-dir", str(tmp_path / "data"), "--user-agent", USER_AGENT, "--shards", "1"])
    assert code == 0
    (run,) = (tmp_path / "data" / "simulations").iterdir()
    assert f"outputs in {run}" in capsys.readouterr().out
    assert json.loads((run / "summary.json").read_text())["policy"] == "bfs"


def test_side_by_side_runs_give_the_outputs_of_a_serial_run(inputs: dict[str, Path], cache: Path,
                                                            two_policies: tuple[Path, dict], tmp_path: Path) -> None:
    parallel, summaries = two_policies
    lines: list[str] = []
    serial = simulate(_settings(), [inputs["docs"]], inputs["queries"], inputs["seeds"], ["bfs", "hybrid"], 3,
                      tmp_path, progress=lines.append, jobs=1, cache=cache)
    for policy in ("bfs", "hybrid"):
        for name in ("order.csv", "curve.csv"):
            assert (tmp_path / policy / name).read_bytes() == (parallel / policy / name).read_bytes(), name
        timeless = [{k: v for k, v in s[policy].items() if not k.endswith("seconds")} for s in (serial, summaries)]
        assert timeless[0] == timeless[1]
    # progress: per policy and cycle, with what is left
    assert "bfs: cycle 2/3 done" in "\n".join(lines) and "about" in lines[-1] and "2/2 policies" in lines[-1]
    # the truth came from the cache the first run filled
    assert json.loads((tmp_path / "truth.json").read_text())["cached"] is True


def test_the_truth_is_kept_until_an_input_or_setting_changes(inputs: dict[str, Path], tmp_path: Path) -> None:
    from crawlcycle.evaluation.ground_truth import ground_truth

    cache = tmp_path / "cache"
    settings = _settings(parse_cache=str(cache / "parse.sqlite"))
    first, cached = ground_truth(settings, [inputs["small"]], inputs["queries"], cache)
    assert not cached and first.pages.height > 10 and first.total() > 0 and first.total("bm25s") > 0
    again, cached = ground_truth(settings, [inputs["small"]], inputs["queries"], cache)
    assert cached and again.folder == first.folder and again.pages.equals(first.pages)
    fewer = tmp_path / "fewer.tsv"
    fewer.write_text("".join(inputs["queries"].read_text().splitlines(keepends=True)[:5]))
    for changed in ((settings, [inputs["small"]], fewer),                       # another workload
                    (_settings(bm25_k1=2.0, parse_cache=settings.parse_cache), [inputs["small"]], inputs["queries"]),
                    (settings, [inputs["docs"]], inputs["queries"])):           # another snapshot
        truth, cached = ground_truth(*changed, cache)
        assert not cached and truth.folder != first.folder
    assert len(list(cache.glob("truth-*"))) == 4
