"""The generated demo web: determinism, the promised shape of the web, and the query log."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import statistics
from collections import Counter, deque
from datetime import date, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
from protego import Protego
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.devtools import demo
from crawlcycle.devtools.demo_web import generate
from crawlcycle.devtools.warc_server import FIXED_DATE
from crawlcycle.fetch.sitemaps import read_sitemap
from crawlcycle.pipeline import stages
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT
from tests.support.net import free_port


def read_warc(path: Path) -> dict[str, dict]:
    out = {}
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            out[rec.rec_headers.get_header("WARC-Target-URI")] = {
                "status": int(rec.http_headers.get_statuscode()),
                "type": rec.http_headers.get_header("Content-Type"),
                "location": rec.http_headers.get_header("Location"),
                "digest": rec.rec_headers.get_header("WARC-Payload-Digest"),
                "etag": rec.http_headers.get_header("ETag"),
                "last_modified": rec.http_headers.get_header("Last-Modified"),
                "body": rec.content_stream().read(),
            }
    return out


def links(url: str, body: bytes) -> list[tuple[str, str]]:
    """(absolute target, anchor text) of every <a href> on a page, parsed by a real HTML parser."""
    doc = lxml.html.fromstring(body)
    return [(urljoin(url, a.get("href")).replace("%7E", "~"), a.text_content().strip())
            for a in doc.iter("a")]


def query_log(log_dir: Path) -> dict[str, list[tuple[str, int]]]:
    out = {}
    for part in sorted(log_dir.iterdir()):
        rows = [line.split("\t") for line in (part / "queries.tsv").read_text().splitlines()]
        assert all(len(r) == 2 for r in rows)
        out[part.name] = [(q, int(f)) for q, f in rows]
    return out


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory):
    made = generate(tmp_path_factory.mktemp("web"))
    records = read_warc(made.warc)
    pages = {u: r for u, r in records.items() if r["status"] == 200 and r["type"].startswith("text/html")}
    graph = {u: links(u, r["body"]) for u, r in pages.items()}
    return made, records, pages, graph


def test_same_seed_same_files_other_seed_differs(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", hosts=8, pages=300, seed=5, days=3)
    b = generate(tmp_path / "b", hosts=8, pages=300, seed=5, days=3)
    c = generate(tmp_path / "c", hosts=8, pages=300, seed=6, days=3)
    digests = [{u: r["digest"] for u, r in read_warc(w.warc).items()} for w in (a, b, c)]
    assert digests[0] == digests[1]
    assert a.warc.read_bytes() == b.warc.read_bytes()
    assert query_log(a.query_log_dir) == query_log(b.query_log_dir)
    assert a.seeds.read_text() == b.seeds.read_text()
    assert digests[0] != digests[2]
    assert query_log(a.query_log_dir) != query_log(c.query_log_dir)
    assert hashlib.sha256(a.warc.read_bytes()).digest() != hashlib.sha256(c.warc.read_bytes()).digest()


def test_the_web_of_a_date_does_not_depend_on_the_days_written(tmp_path: Path) -> None:
    short = generate(tmp_path / "short", hosts=8, pages=300, seed=5, days=3)
    long = generate(tmp_path / "long", hosts=8, pages=300, seed=5, days=5)
    assert [d for d, _ in long.days] == [date(2026, 11, 1) + timedelta(days=k) for k in range(5)]
    assert long.warc == long.days[0][1] == tmp_path / "long" / "web.warc.gz"
    for (day, a), (same_day, b) in zip(short.days, long.days, strict=False):
        assert day == same_day and a.read_bytes() == b.read_bytes()
    assert long.days[4][1].name == "web-2026-11-05.warc.gz"
    assert long.days[4][1].read_bytes() != long.days[3][1].read_bytes()


@pytest.fixture(scope="module")
def days(web) -> list[dict[str, dict]]:
    """The HTML pages of each day of the default web."""
    return [{u: r for u, r in read_warc(path).items() if r["status"] == 200 and r["type"].startswith("text/html")}
            for _, path in web[0].days]


def test_pages_change_by_their_rates_with_validators_to_match(days: list[dict[str, dict]]) -> None:
    changes: Counter[str] = Counter()
    for before, after in zip(days, days[1:], strict=False):
        for u in before.keys() & after.keys():
            changed = before[u]["body"] != after[u]["body"]
            changes[u] += changed
            # the validators change with the bytes, and only then
            assert (before[u]["etag"] != after[u]["etag"], before[u]["last_modified"] != after[u]["last_modified"]) \
                == (changed, changed)
    kept = days[0].keys() & days[-1].keys()
    assert 0.45 < sum(changes[u] == 0 for u in kept) / len(kept) < 0.9  # most pages change rarely
    assert 0.03 < sum(changes[u] >= 4 for u in kept) / len(kept) < 0.3  # a few nearly every day
    # Last-Modified: the midnight before the first day of the run of days with the same bytes
    for u, rec in days[-1].items():
        since = len(days) - 1
        while since > 0 and u in days[since - 1] and days[since - 1][u]["body"] == rec["body"]:
            since -= 1
        assert parsedate_to_datetime(rec["last_modified"]).date() == date(2026, 11, 1) + timedelta(days=since - 1)
        assert rec["etag"] == f'"{int(parsedate_to_datetime(rec["last_modified"]).timestamp()):x}-{len(rec["body"]):x}"'


def test_pages_are_published_and_removed_by_date(days: list[dict[str, dict]]) -> None:
    first, last = days[0], days[-1]
    added, removed = last.keys() - first.keys(), first.keys() - last.keys()
    assert 40 <= len(added) <= 150 and 10 <= len(removed) <= 80
    linked = [{t for u, r in d.items() for t, _ in links(u, r["body"])} for d in (first, last)]
    assert not added & linked[0]  # no page links to a page before it is published
    assert added <= linked[1]  # once published, its parent links to it
    assert removed <= linked[1]  # a removed page answers 404, and the links to it stay
    for d in range(1, len(days)):  # a page is published once and removed once: never back
        assert not (days[d - 1].keys() - days[d].keys()) & days[-1].keys()
        assert not (days[d].keys() - days[d - 1].keys()) & days[0].keys()


def test_default_web_has_its_hosts(web) -> None:
    made, records, pages, graph = web
    hosts = {urlsplit(u).hostname for u in records}
    assert len(hosts) >= 24 and all(h.endswith(".demo.test") for h in hosts)
    assert 2400 <= len(pages) <= 2410  # the pages asked for, plus a profile page
    for h in hosts:
        home = f"http://{h}/"
        assert home in pages
        assert any(urlsplit(t).hostname == h and t != home for t, _ in graph[home])
    seeds = made.seeds.read_text().split()
    assert 2 <= len(seeds) <= 6 and all(s in pages for s in seeds)


def test_urls_titles_and_anchors_share_words(web) -> None:
    _, _, pages, graph = web
    shaped = [u for u in pages if re.fullmatch(r"http://[a-z-]+\.demo\.test/[a-z]+/[a-z0-9-]+\.html", u)]
    assert len(shaped) > 0.98 * len(pages) - 30
    titles = {u: lxml.html.fromstring(pages[u]["body"]).findtext(".//title") for u in shaped}
    for u in shaped:
        assert u.rsplit("/", 1)[1].removesuffix(".html") == re.sub(r"[^a-z0-9]+", "-", titles[u].lower())
    anchors = [(t, text) for ls in graph.values() for t, text in ls if t in titles]
    same = sum(text == titles[t] for t, text in anchors)
    assert same > 0.9 * len(anchors)


def test_in_links_are_skewed_and_cross_hosts(web) -> None:
    _, _, pages, graph = web
    indegree = Counter(t for ls in graph.values() for t in {t for t, _ in ls})
    counts = sorted((indegree[u] for u in pages), reverse=True)
    assert sum(counts[: len(counts) // 100]) > 0.15 * sum(counts)  # top 1 % hold a big share
    assert counts[0] >= 50 * statistics.median(counts)
    cross = sum(urlsplit(s).hostname != urlsplit(t).hostname for s, ls in graph.items() for t, _ in ls)
    assert cross > 200
    hrefs = [h for page in pages.values() for h in re.findall(r'href="([^"]+)"', page["body"].decode())]
    kinds = Counter("absolute" if "://" in h else "up" if h.startswith("../") else "root" if h[0] == "/"
                    else "sibling" for h in hrefs)
    assert min(kinds[k] for k in ("absolute", "up", "root", "sibling")) > 100


def _day(path: Path) -> tuple[dict[str, dict], dict[str, dict], dict[str, list[tuple[str, str]]]]:
    """Records, HTML pages and the link graph of one day's WARC."""
    records = read_warc(path)
    pages = {u: r for u, r in records.items() if r["status"] == 200 and r["type"].startswith("text/html")}
    return records, pages, {u: links(u, r["body"]) for u, r in pages.items()}


@pytest.mark.parametrize("day", [0, -1])
def test_every_allowed_page_is_reachable_from_the_seeds(web, day: int) -> None:
    """A crawl that obeys robots.txt and follows redirects reaches every page it may fetch, on the first day and on
    the last."""
    made = web[0]
    records, pages, graph = web[1:] if day == 0 else _day(made.days[day][1])
    robots = {}
    for url, rec in records.items():
        if url.endswith("/robots.txt"):
            robots[urlsplit(url).hostname] = Protego.parse(rec["body"].decode())

    def allowed(url: str) -> bool:
        rules = robots.get(urlsplit(url).hostname)
        return rules is None or rules.can_fetch(url, "crawlcycle")

    seen = set(made.seeds.read_text().split())
    queue = deque(seen)
    while queue:
        url = queue.popleft()
        rec = records.get(url)
        nxt = [rec["location"]] if rec and rec["location"] else [t for t, _ in graph.get(url, [])]
        for t in nxt:
            if t not in seen and allowed(t):
                seen.add(t)
                queue.append(t)
    fetchable = {u for u in pages if allowed(u)}
    assert fetchable <= seen
    assert len(pages) - len(fetchable) >= 5  # the disallowed drafts exist and are linked
    assert {u for u in pages if not allowed(u)} & {t for ls in graph.values() for t, _ in ls}


def test_awkward_cases(web) -> None:
    made, records, pages, graph = web
    redirects = {u: r for u, r in records.items() if r["status"] in (301, 302)}
    assert {301, 302} <= {r["status"] for r in redirects.values()}
    assert all(r["location"] in records for r in redirects.values())
    assert any(urlsplit(u).hostname != urlsplit(r["location"]).hostname for u, r in redirects.items())
    assert any(r["location"] in redirects for r in redirects.values())  # a chain of two hops
    linked = {t for ls in graph.values() for t, _ in ls}
    assert redirects.keys() - {r["location"] for r in redirects.values()} <= linked
    assert len(linked - records.keys()) >= 20  # links to pages that answer 404

    robots = {u: r["body"].decode() for u, r in records.items() if u.endswith("/robots.txt")}
    strict = [text for text in robots.values() if "Crawl-delay: 0.2" in text]
    assert len(strict) == 1 and "Disallow: /drafts/" in strict[0]
    listing = {u: text for u, text in robots.items() if "Sitemap:" in text}
    assert all(text == "User-agent: *\nDisallow:\n" for u, text in robots.items() if text not in strict
               and u not in listing)
    hosts = {urlsplit(u).hostname for u in records}
    assert len(hosts) - len(robots) == 1  # one host has no robots.txt at all
    # one tail host names a sitemap that lists its pages, each a page of the web
    (robots_url, text), = listing.items()
    sitemap = read_sitemap(records[text.split("Sitemap: ")[1].strip()]["body"], 1_000_000)
    host = urlsplit(robots_url).hostname
    assert sitemap.kind == "urlset" and sitemap.reason is None
    assert set(sitemap.locs) == {u for u in pages if urlsplit(u).hostname == host}

    types = {r["type"].split(";")[0]: r["body"] for u, r in records.items() if not u.endswith(("robots.txt", ".xml"))}
    assert types["application/pdf"].startswith(b"%PDF-")
    assert types["image/png"].startswith(b"\x89PNG\r\n\x1a\n")
    assert "text/plain" in types
    assert any(u.endswith((".pdf", ".png", ".txt")) for u in linked)

    behaviour = json.loads(made.behaviour.read_text())
    assert behaviour.keys() <= hosts
    rules = sorted((k, v) for rule in behaviour.values() for k, v in rule.items())
    assert rules == [("conditional", False), ("delay", 0.3), ("validators", "fixed-date"), ("validators", "none")]


def test_tail_topics_are_rarely_linked_but_queried(web) -> None:
    made, _, pages, graph = web
    external = Counter(urlsplit(t).hostname for s, ls in graph.items() for t, _ in ls
                       if urlsplit(t).hostname != urlsplit(s).hostname)
    hosts = {urlsplit(u).hostname for u in pages}
    tail = {h for h in hosts if external[h] <= 1}
    assert 1 <= len(tail) <= len(hosts) // 4
    indegree = Counter(t for ls in graph.values() for t in {t for t, _ in ls} if not t.endswith("/"))
    tail_pages = [u for u in pages if urlsplit(u).hostname in tail and not u.endswith("/")]
    assert max(indegree[u] for u in tail_pages) <= 2

    tail_tokens = {tok for u in tail_pages for tok in re.split(r"[-/.]", u)}
    day = next(iter(query_log(made.query_log_dir).values()))
    tail_queries = [(q, f) for q, f in day if set(q.split()) <= tail_tokens]
    assert len(tail_queries) >= 5
    median = statistics.median(f for _, f in day)
    assert statistics.median(f for _, f in tail_queries) <= median


def test_query_log_partitions(web) -> None:
    made, _, pages, graph = web
    log = query_log(made.query_log_dir)
    assert list(log) == [f"dt={date(2026, 11, 1) + timedelta(days=d)}" for d in range(7)]
    words = {tok for u in pages for tok in re.split(r"[-/.]", u)}
    words |= {w.lower() for ls in graph.values() for _, text in ls for w in text.split()}
    days = list(log.values())
    for rows in days:
        queries = [q for q, _ in rows]
        freqs = [f for _, f in rows]
        assert len(set(queries)) == len(queries) > 300
        assert freqs == sorted(freqs, reverse=True) and min(freqs) >= 1
        assert freqs[0] >= 100 * freqs[-1]  # a Zipf head and a long tail
        assert freqs[9] == round(freqs[0] / 10)
        on_topic = [q for q in queries[:100] if all(w in words for w in q.split())]
        assert len(on_topic) >= 90
    for a, b in zip(days, days[1:], strict=False):
        qa, qb = {q for q, _ in a}, {q for q, _ in b}
        assert qa != qb and len(qa & qb) > 0.85 * len(qa | qb)


def test_rejects_sizes_it_cannot_make(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hosts"):
        generate(tmp_path, hosts=2)
    with pytest.raises(ValueError, match="pages"):
        generate(tmp_path, hosts=24, pages=100)


def _get(port: int, url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", urlsplit(url).path, headers={"Host": urlsplit(url).hostname,
                                                     **{k.replace("_", "-"): v for k, v in headers.items()}})
    resp = conn.getresponse()
    out = resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    conn.close()
    return out


def test_the_demo_serves_the_day_of_the_running_cycle_and_answers_conditions(tmp_path: Path) -> None:
    settings = load_settings(environ={}, overrides={
        "user_agent": USER_AGENT, "data_dir": str(tmp_path / "data"), "db_path": str(tmp_path / "crawl.duckdb"),
        "demo_hosts": 8, "demo_pages": 240, "demo_port": free_port(), "start_date": "2026-11-01",
        "seeds_file": str(tmp_path / "data" / "demo-web" / "seeds.txt"),
        "query_log_dir": str(tmp_path / "data" / "demo-web" / "query_log")})
    days = demo.demo_days(settings)
    pages = [{u: r for u, r in read_warc(path).items() if r["status"] == 200} for _, path in days]
    changed = next(u for u in pages[0] if u in pages[2] and pages[0][u]["body"] != pages[2][u]["body"]
                   and u.endswith(".html") and "/latest" not in u)
    published = next(u for u in pages[2].keys() - pages[0].keys())
    stages.init(settings)
    with demo.start_web(settings, clock=demo.CrawlDate(settings)) as server:
        assert _get(server.port, changed)[2] == pages[0][changed]["body"]  # no cycle yet: the first day
        assert _get(server.port, published)[0] == 404
        stages.begin(settings, date(2026, 11, 3))  # the cycle of the third day opens before its fetch
        assert _get(server.port, changed)[2] == pages[2][changed]["body"]
        assert _get(server.port, published)[2] == pages[2][published]["body"]
        behaviour = json.loads((demo.demo_dir(settings) / "behaviour.json").read_text())
        by_rule = {next(iter(rule.items())): host for host, rule in behaviour.items()}
        assert len(by_rule) == 4  # slow, ignoring conditions, one date for all, no validators: four hosts
        for url, rec in pages[2].items():
            host = urlsplit(url).hostname
            if host not in behaviour and url.endswith(".html"):
                asked = {"If_None_Match": rec["etag"], "If_Modified_Since": rec["last_modified"]}
                assert _get(server.port, url, **asked)[:3:2] == (304, b"")
                assert _get(server.port, url, If_Modified_Since=rec["last_modified"])[0] == 304
                assert _get(server.port, url, If_None_Match='"other"')[0] == 200
            elif host == by_rule["conditional", False]:
                assert _get(server.port, url, If_None_Match=rec["etag"])[0] == 200
            elif host == by_rule["validators", "fixed-date"]:
                status, headers, _ = _get(server.port, url, If_Modified_Since=FIXED_DATE)
                assert (status, headers["last-modified"], headers.get("etag")) == (304, FIXED_DATE, None)
            elif host == by_rule["validators", "none"]:
                status, headers, _ = _get(server.port, url, If_Modified_Since=rec["last_modified"])
                assert status == 200 and not {"etag", "last-modified"} & headers.keys()
