"""The generated demo web: determinism, the promised shape of the web, and the query log."""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections import Counter, deque
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
import pytest
from protego import Protego
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.devtools.demo_web import generate
from crawlcycle.fetch.sitemaps import read_sitemap


def read_warc(path: Path) -> dict[str, dict]:
    out = {}
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            out[rec.rec_headers.get_header("WARC-Target-URI")] = {
                "status": int(rec.http_headers.get_statuscode()),
                "type": rec.http_headers.get_header("Content-Type"),
                "location": rec.http_headers.get_header("Location"),
                "digest": rec.rec_headers.get_header("WARC-Payload-Digest"),
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


def test_every_allowed_page_is_reachable_from_the_seeds(web) -> None:
    """A crawl that obeys robots.txt and follows redirects reaches every page it may fetch."""
    made, records, pages, graph = web
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
    assert len(behaviour) == 1
    (slow, rule), = behaviour.items()
    assert slow in hosts and rule["delay"] > 0


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
