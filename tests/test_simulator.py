"""The offline simulator on real documentation sites cut from ../shared/corpus/dev-docs.warc.gz, with real
web-search queries (CodeSearchNet) whose frequencies are synthetic: Zipf, f(rank) = round(100 / rank)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlcycle.cli import main
from crawlcycle.devtools.warc_server import Series
from crawlcycle.evaluation.crawl_metrics import BUDGETS, ORACLES, REGRET, engagement_text
from crawlcycle.evaluation.ground_truth import JUDGES
from crawlcycle.evaluation.simulator import simulate
from crawlcycle.quality.gate_suites import check_names
from crawlcycle.settings import POLICIES, Settings
from crawlcycle.settings.sources import load_settings
from crawlcycle.ui.report import ENGAGEMENT
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
    panel = [(f"policy_{j}", f"ideal_{j}") for j in JUDGES[1:]]
    assert points.columns == ["fetched", "fraction", "policy", "ideal", *(c for pair in panel for c in pair), "p_cs",
                              "p_st"]
    for judged, ideal in (("policy", "ideal"), *panel):
        assert (points[ideal] >= points[judged] - 1e-12).all()
        assert points[judged].is_sorted() and points[ideal].is_sorted()
        assert points[judged][-1] > 0  # the crawl found pages that answer the workload, by either judge
    assert points["p_st"].is_sorted()
    summary = json.loads((out / policy / "summary.json").read_text())
    assert summary == json.loads(json.dumps(summaries[policy]))
    assert summary["snapshot_pages"] > 80 and summary["hot_pages"] == -(-summary["snapshot_pages"] // 10)
    assert summary["budgets"] == summary["budgets_by_judge"]["reference"]
    for budget in BUDGETS:
        for judge, suffix in (("reference", ""), *((j, f"_{j}") for j in JUDGES[1:])):
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


def test_each_batch_s_regret_is_in_regret_csv_the_summary_and_the_crawl_s_view(two_policies: tuple[Path, dict]
                                                                              ) -> None:
    out, summaries = two_policies
    for policy in ("bfs", "hybrid"):
        regret = pl.read_csv(out / policy / "regret.csv")
        with duckdb.connect(str(out / policy / "work" / "crawl.duckdb"), read_only=True) as con:
            view = con.sql(f"SELECT judge, cycle, {', '.join(REGRET)} FROM v_batch_regret ORDER BY judge, cycle").pl()
            seeds = con.execute("SELECT count(*) FROM frontier WHERE source = 'seed'").fetchall()[0][0]
        assert regret.to_dicts() == view.to_dicts()
        assert regret.select("judge", "cycle").rows() == [(j, c) for j in sorted(JUDGES) for c in (1, 2, 3)]
        assert regret.filter(pl.col("cycle") == 1)["slots"].to_list() == [seeds] * len(JUDGES)  # the seeds, then 12
        assert (regret.filter(pl.col("cycle") > 1)["slots"] == 12).all()
        # what the batch took is of its frontier, which holds only unfetched pages
        assert (regret["chosen"] <= regret["best_frontier"]).all()
        assert (regret["best_frontier"] <= regret["best_all"]).all()
        assert (regret["best_frontier"] > 0).all()
        for judge in JUDGES:
            mine = summaries[policy]["regret"][judge]
            assert mine["cycles"] == regret.filter(pl.col("judge") == judge).drop("judge").to_dicts()
            # three cycles: the means from cycle 3 on are cycle 3's figures
            assert mine["mean_from_cycle_3"] == {k: round(mine["cycles"][2][k], 9)
                                                 for k in ("choice_efficiency", "discovery")}
        assert (out / policy / "regret.png").read_bytes()[:8] == PNG_MAGIC


def test_the_oracle_runs_once_per_judge_by_that_judge_s_true_impact(inputs: dict[str, Path], cache: Path,
                                                                    two_policies: tuple[Path, dict],
                                                                    tmp_path: Path) -> None:
    _, policies = two_policies
    summaries = simulate(_settings(), [inputs["docs"]], inputs["queries"], inputs["seeds"], list(ORACLES.values()), 3,
                         tmp_path, progress=lambda m: None, jobs=2, cache=cache)
    truth = Path(json.loads((tmp_path / "truth.json").read_text())["folder"])
    pages = pl.read_parquet(truth / "truth.parquet")
    for judge, name in ORACLES.items():
        assert (summaries[name]["policy"], summaries[name]["oracle_judge"]) == ("oracle", judge)
        impact = truth / f"impact-{judge}.parquet"
        column = "impact" if judge == "reference" else f"impact_{judge}"
        written = pl.read_parquet(impact)
        assert written.filter(pl.col("url") == pl.col("page")).drop("page").equals(
            pages.select("url", "host", impact=column))
        # a directory the snapshot server redirects to its index page is worth that page
        aliases = written.filter(pl.col("url") != pl.col("page")).join(
            written.select("url", own="impact"), left_on="page", right_on="url")
        assert aliases.height and (aliases["impact"] == aliases["own"]).all()
        assert all(page in (url + "index.html", url + "/index.html")
                   for url, page in aliases.select("url", "page").rows())
        with duckdb.connect(str(tmp_path / name / "work" / "crawl.duckdb"), read_only=True) as con:
            recorded = con.execute("SELECT DISTINCT settings->'values'->>'oracle_impact' FROM cycles").fetchall()
        assert recorded == [(str(impact),)]
        # by its own judge, each oracle is ahead of the other oracle and of every policy at the largest budget
        ten = {p: s["budgets_by_judge"][judge]["10%"]["pct_of_ideal"] for p, s in {**policies, **summaries}.items()}
        assert max(ten, key=ten.get) == name


def test_policy_all_runs_every_policy_and_draws_them_together(inputs: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    code = main(["simulate", "--snapshot", str(inputs["small"]), "--queries", str(inputs["queries"]),
                 "--seeds", str(inputs["seeds"]), "--policy", "all", "--batch-size", "6", "--cycles", "1",
                 "--out", str(tmp_path / "out"), "--user-agent", USER_AGENT, "--shards", "1",
                 "--data-dir", str(tmp_path / "data")])
    assert code == 0
    printed = capsys.readouterr().out
    for policy in (*POLICIES, *ORACLES.values()):  # every policy, and the oracle by each judge
        assert all((tmp_path / "out" / policy / name).is_file() for name in ("order.csv", "curve.png", "regret.csv"))
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
    assert "bfs: cycle 2/3 done" in "\n".join(lines) and "about" in lines[-1] and "2/2 runs" in lines[-1]
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


# A web that changes, small enough to know every answer: a home page linking four pages. Version 2 (from cycle 3)
# rewrites p1 (its word alpha becomes omega), drops p2, publishes p4 (404 before) and keeps home and p3 as they were.
WORDS = {"home": "Welcome to this small site about nothing in particular",
         "p1": "harbour lantern copper meadow", "p1v2": "orchard violin pebble thunder",
         "p2": "glacier saddle marble candle", "p3": "falcon quarry ribbon tundra", "p4": "cobalt prairie ferry anvil"}
TERMS = {"p1": "alpha", "p1v2": "omega", "p2": "beta", "p3": "gamma", "p4": "delta"}


def _page(name: str) -> bytes:
    if name == "home":
        links = "".join(f'<li><a href="/p{i}.html">{n}</a></li>' for i, n in enumerate(
            ("first", "second", "third", "fourth"), 1))
        return (f"<html><head><title>Small site</title></head><body><main><h1>Small site</h1><p>{WORDS['home']}."
                f"</p><ul>{links}</ul></main></body></html>").encode()
    term, words = TERMS[name], WORDS[name].split()
    paragraphs = "".join(f"<p>The {term} {w} shows how a {w} and the {term} stand together in the long evening, "
                         f"as every {w} of the {term} has done before the {words[(i + 1) % 4]} came.</p>"
                         for i, w in enumerate(words))
    return (f"<html><head><title>About {term}</title></head><body><main><h1>About {term}</h1>{paragraphs}</main>"
            "</body></html>").encode()


def _version(path: Path, names: dict[str, str]) -> Path:
    """A WARC of site.test: robots.txt and a page per ``names`` (path -> page name)."""
    records = {"/robots.txt": (b"User-agent: *\nDisallow:\n", "text/plain")}
    records |= {target: (_page(name), "text/html; charset=utf-8") for target, name in names.items()}
    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        for target, (body, ctype) in records.items():
            writer.write_record(writer.create_warc_record(
                f"http://site.test{target}", "response", payload=io.BytesIO(body),
                http_headers=StatusAndHeaders("200 OK", [("Content-Type", ctype)], protocol="HTTP/1.1")))
    return path


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("two-versions")
    (d / "seeds.txt").write_text("http://site.test/\n")
    (d / "queries.tsv").write_text("omega\t1\ngamma\t3\ndelta\t1\nalpha\t2\nbeta\t2\n")
    return {"v1": _version(d / "v1.warc.gz", {"/": "home", "/p1.html": "p1", "/p2.html": "p2", "/p3.html": "p3"}),
            "v2": _version(d / "v2.warc.gz", {"/": "home", "/p1.html": "p1v2", "/p3.html": "p3", "/p4.html": "p4"}),
            "seeds": d / "seeds.txt", "queries": d / "queries.tsv"}


def test_quality_freshness_and_age_on_a_web_whose_answer_is_known(two_versions: dict[str, Path], cache: Path,
                                                                  tmp_path: Path) -> None:
    code = main(["simulate", "--snapshot", str(two_versions["v1"]), "--snapshot", f"{two_versions['v2']}@3",
                 "--switch", "at-start", "--queries", str(two_versions["queries"]), "--seeds",
                 str(two_versions["seeds"]), "--policy", "bfs", "--refresh-policy", "none", "--cycles", "4",
                 "--batch-size", "12", "--out", str(tmp_path / "out"), "--cache", str(cache),
                 "--user-agent", USER_AGENT, "--shards", "1", "--data-dir", str(tmp_path / "data")])
    assert code == 0
    rows = list(csv.DictReader((tmp_path / "out" / "quality.csv").open()))
    figures = [{k: float(r[k]) for k in ("quality", "quality_bm25s", "freshness", "age")} for r in rows]
    # Completeness: the stored pages fresh and in the live order. At 3 and 4 the stale p1 would answer omega: 4 / 5.
    assert [(float(r["complete"]), float(r["complete_bm25s"])) for r in rows] == [(0.0, 0.0), (1.0, 1.0), (0.8, 0.8),
                                                                                 (0.8, 0.8)]
    # 1: only home is stored, and no query finds it. 2: every page of version 1 is stored and fresh: each query that
    # has a live answer finds it first. 3 and 4: version 2 is live; p1 and p2 are stale (p2 gone), home and p3 fresh.
    # Of the queries with a live answer (omega 1, gamma 3, delta 1), only gamma's is shown: 3 / 5.
    assert figures == [{"quality": 0.0, "quality_bm25s": 0.0, "freshness": 1.0, "age": 0.0},
                       {"quality": 1.0, "quality_bm25s": 1.0, "freshness": 1.0, "age": 0.0},
                       {"quality": 0.6, "quality_bm25s": 0.6, "freshness": 0.5, "age": 0.5},
                       {"quality": 0.6, "quality_bm25s": 0.6, "freshness": 0.5, "age": 1.0}]
    assert [int(r["indexed"]) for r in rows] == [1, 4, 4, 4]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    repo = summary["repository"]
    assert repo["first_switch"] == 3 and [{k: c[k] for k in figures[0]} for c in repo["cycles"]] == figures
    assert repo["mean_after_first_switch"] == {"cycles": 2, "quality": 0.6, "quality_bm25s": 0.6, "complete": 0.8,
                                               "complete_bm25s": 0.8, "freshness": 0.5, "age": 0.75,
                                               "batch_new": 0.0, "batch_refresh": 0.0}
    assert summary["refresh_policy"] == "none" and summary["switch"] == "at-start"
    assert [v["start"] for v in summary["versions"]] == [1, 3]
    # what the change models predicted as each cycle closed, against the next cycle's web: from cycle 3 on p1 holds
    # another text and p2 is gone; home and p3 are as stored
    predicted = list(csv.DictReader((tmp_path / "out" / "changes.csv").open()))
    assert {(r["cycle"], r["url"].rsplit("/", 1)[1], r["changed"]) for r in predicted} == {
        ("1", "", "false"), *((c, page, "true" if page in ("p1.html", "p2.html") else "false")
                              for c in ("2", "3") for page in ("", "p1.html", "p2.html", "p3.html"))}
    after = [r for r in predicted if int(r["cycle"]) + 1 >= 3]
    calibration = summary["calibration"]
    assert (calibration["pages"], calibration["changed"]) == (8, 0.5)
    for model in ("p_poisson", "p_bursts"):
        brier = sum((float(r[model]) - (r["changed"] == "true")) ** 2 for r in after) / len(after)
        assert calibration[model]["brier"] == pytest.approx(brier, abs=1e-6)
        assert sum(b["n"] for b in calibration[model]["bins"]) == 8
    with (tmp_path / "out" / "order.csv").open() as f:
        order = list(csv.DictReader(f))
    assert list(order[0]) == ["cycle", "url", "rank", "kind", "version", "outcome"]
    assert [(r["cycle"], r["url"].rsplit("/", 1)[1], r["kind"], r["version"], r["outcome"]) for r in order] == [
        ("1", "", "new", "1", "fetched"), *(("2", f"p{i}.html", "new", "1", "gone" if i == 4 else "fetched")
                                            for i in (1, 2, 3, 4))]
    truth = json.loads((tmp_path / "out" / "truth.json").read_text())
    assert [c.get("same_as") for c in truth["cycles"]] == [None, 1, None, 3]  # one truth per distinct web
    assert (tmp_path / "out" / "quality.png").read_bytes()[:8] == PNG_MAGIC


def _refresh_gates_warn() -> str:
    """The materialize checks that refused a batch holding stored pages before the gates knew refreshes: warnings,
    where they still exist."""
    return ",".join(n for n in ("batch_not_crawled", "batch_open") if n in check_names())


def test_side_by_side_runs_on_a_series_give_the_outputs_of_a_serial_run(two_versions: dict[str, Path], cache: Path,
                                                                        tmp_path: Path) -> None:
    versions = [two_versions["v1"], two_versions["v2"]]
    outs = {}
    for jobs in (2, 1):
        outs[jobs] = simulate(_settings(gate_warn=_refresh_gates_warn()), versions, two_versions["queries"],
                              two_versions["seeds"], ["bfs"], 5, tmp_path / f"jobs-{jobs}", progress=lambda m: None,
                              jobs=jobs, cache=cache, starts=[1, 4], switch_seed=5,
                              refresh_policies=["none", "uniform"])
    assert list(outs[1]) == ["none", "uniform"]
    for run in ("none", "uniform"):
        for name in ("order.csv", "quality.csv", "curve.csv"):
            assert (tmp_path / "jobs-1" / run / name).read_bytes() == (tmp_path / "jobs-2" / run / name).read_bytes()
        timeless = [{k: v for k, v in s[run].items() if not k.endswith("seconds")} for s in outs.values()]
        assert timeless[0] == timeless[1]
    # every fetch, refreshes included, with the version the web served it from
    web = Series([([p], s) for p, s in zip(versions, (1, 4), strict=True)], seed=5)
    order = list(csv.DictReader((tmp_path / "jobs-1" / "uniform" / "order.csv").open()))
    refreshes = [r for r in order if r["kind"] == "refresh"]
    assert refreshes and {r["kind"] for r in order} == {"new", "refresh"}
    assert all(int(r["version"]) == web.version_of(r["url"], int(r["cycle"])) + 1 for r in order)
    assert {r["outcome"] for r in refreshes} <= {"fetched", "not_modified", "unchanged", "changed", "gone"}
    assert outs[1]["uniform"]["repository"]["first_switch"] == web.first_switch() == 2
    assert sum(c["batch_refresh"] for c in outs[1]["uniform"]["repository"]["cycles"]) == len(
        [r for r in order if r["kind"] == "refresh"])
    assert all(c["batch_refresh"] == 0 for c in outs[1]["none"]["repository"]["cycles"])
    assert (tmp_path / "jobs-1" / "quality.png").read_bytes()[:8] == PNG_MAGIC


def test_a_series_keeps_the_refresh_setting_and_one_snapshot_refreshes_nothing(
        two_versions: dict[str, Path], two_policies: tuple[Path, dict], cache: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    assert {s["refresh_policy"] for s in two_policies[1].values()} == {"none"}
    code = main(["simulate", "--snapshot", str(two_versions["v1"]), "--snapshot", f"{two_versions['v2']}@2",
                 "--queries", str(two_versions["queries"]), "--seeds", str(two_versions["seeds"]), "--policy", "bfs",
                 "--cycles", "2", "--batch-size", "12", "--out", str(tmp_path / "out"), "--cache", str(cache),
                 "--user-agent", USER_AGENT, "--shards", "1", "--data-dir", str(tmp_path / "data"),
                 *(["--gate-warn", _refresh_gates_warn()] if _refresh_gates_warn() else [])])
    assert code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["refresh_policy"] == Settings().refresh_policy == "impact"
    assert "repository (cycles >= 2) quality" in capsys.readouterr().out


@pytest.mark.parametrize(("flags", "message"), [
    (["--snapshot", "V1@3"], "the first version starts at cycle 1"),
    (["--snapshot", "V1", "--snapshot", "V2"], "v2.warc.gz needs the cycle it starts at (FILE@CYCLE)"),
    (["--snapshot", "V1", "V2", "--snapshot", "V2@3"], "a series names one file per --snapshot"),
    (["--snapshot", "V1", "--snapshot", "V2@9"], "starts at cycle 9, after the last of the 3 cycles"),
    (["--snapshot", "V1", "--snapshot", "V2@1"], "must start after the version before it (cycle 1)"),
    (["--snapshot", "V1", "--refresh-policy", "impact,weekly"], "--refresh-policy: unknown refresh policy weekly"),
    (["--snapshot", "V1", "--policy", "bfs,nope"], "--policy: unknown policy nope"),
])
def test_bad_series_flags_are_one_line_errors(two_versions: dict[str, Path], tmp_path: Path, flags: list[str],
                                              message: str, capsys: pytest.CaptureFixture) -> None:
    given = [str(two_versions["v1"]) + f[2:] if f.startswith("V1") else str(two_versions["v2"]) + f[2:]
             if f.startswith("V2") else f for f in flags]
    code = main(["simulate", *given, "--queries", str(two_versions["queries"]), "--seeds", str(two_versions["seeds"]),
                 "--cycles", "3", "--out", str(tmp_path / "out"), "--user-agent", USER_AGENT,
                 "--data-dir", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()
