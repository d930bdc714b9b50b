"""rel=canonical through the real stages: handwritten pages and a real documentation page naming their canonical URL
(``<link rel=canonical>``, the ``Link`` header), served on loopback and crawled over cycles into a real DuckDB file;
what is folded into a duplicate, what is only recorded, the ranker's index and results, and a re-run of the cycle
that folded a page stored earlier."""

from __future__ import annotations

import random
from datetime import date
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlcycle.db import connect, run_sql, transaction
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings
from tests.support.demo import USER_AGENT
from tests.support.faultserver import FaultServer, redirect, respond

SITE = "http://site.test"
ABOUT = "http://python.docs.test/about.html"
VARIANT = f"{ABOUT}?highlight=python"  # Sphinx's search links to a page with the words to highlight
STEMS = ("crawl frontier canon duplic index rank search page link anchor host cycle batch query fetch parse snap "
         "archive fold print view session variant release note").split()
WORDS = [a + b for a in STEMS for b in ("", "s", "ed", "ing", "er", "ly", "ion", "al", "ment", "ness")]


def doc(title: str, canonical: str | None = None, links: tuple[str, ...] = (), head: str = "") -> bytes:
    """A page of its own words (no two are near-duplicates), naming ``canonical`` in its head."""
    rng = random.Random(title)
    words = " ".join(rng.choice(WORDS) for _ in range(200))
    head += f"<title>{title}</title>" + (f'<link rel="canonical" href="{canonical}" />' if canonical else "")
    anchors = "".join(f'<a href="{u}">{u}</a> ' for u in links)
    return (f"<!DOCTYPE html><html lang='en'><head>{head}</head><body><main><h1>{title}</h1><p>{title} {words}</p>"
            f"<p>{anchors}</p></main></body></html>").encode()


def real_page(dev_docs: Path, url: str) -> bytes:
    with open(dev_docs, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response" and rec.rec_headers.get_header("WARC-Target-URI") == url:
                return rec.content_stream().read()
    raise AssertionError(f"{url} is not in {dev_docs}")


def serve_site(server: FaultServer, about: bytes) -> None:
    page = lambda body: respond(200, body)  # noqa: E731
    routes = {
        "/": page(doc("Home", "http://site.test/", (
            "/index.html", "/guide?view=print", "/chain-a", "/chain-b", "/chain-c", "/cross", "/coreapi/index.html",
            "/moved-canon", "/doc", "/private-canon"),
            head='<meta property="article:modified_time" content="2024-05-06T10:00:00+00:00">')),
        # the same page under its file name, naming / relatively; its own link still counts
        "/index.html": page(doc("Home page", "./", ("/only-from-index",))),
        "/only-from-index": page(doc("Linked from index.html only")),
        # a print view naming a page nothing links to: it enters the frontier through the canonical
        "/guide?view=print": page(doc("Guide for printing", "/guide")),
        "/guide": page(doc("Guide", head='<time datetime="2023-01-01">January</time>')),
        "/chain-a": page(doc("Chain A", "/chain-b")),
        "/chain-b": page(doc("Chain B", "/chain-c")),
        "/chain-c": page(doc("Chain C", "/chain-c")),
        "/cross": page(doc("Cross", "http://other.test/cross")),
        # the canonical of the Django REST framework's docs as the Debian package ships it: a 404 of the same host
        "/coreapi/index.html": page(doc("Core API", "../https://www.django-rest-framework.org/coreapi/")),
        "/moved-canon": page(doc("Moved canonical", "/old")),
        "/old": redirect("/new", 301),
        "/new": page(doc("New")),
        # a PDF names its HTML version in a Link header, after a link of another kind
        "/doc": respond(200, b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\n", content_type="application/pdf", headers={
            "Link": '<http://fonts.test/a.woff2>; rel=preload; as="font", </doc.html>; title="x, y"; rel="canonical"'}),
        "/doc.html": page(doc("Document")),
        "/private-canon": page(doc("Private canonical", "/private/page")),
    }
    for path, handler in routes.items():
        server.route("site.test", path, handler)
    for host in ("site.test", "python.docs.test"):
        server.route(host, "/robots.txt", respond(404))
    server.route("python.docs.test", "/about.html?highlight=python", page(about))
    server.route("python.docs.test", "/about.html", page(about))


@pytest.fixture
def crawl(server: FaultServer, dev_docs: Path, tmp_path: Path) -> Settings:
    serve_site(server, real_page(dev_docs, ABOUT))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{SITE}/\n{VARIANT}\n")
    log = tmp_path / "log" / "dt=2026-11-01"
    log.mkdir(parents=True)
    (log / "queries.tsv").write_text("guide\t5\nabout these documents\t3\nchain\t2\n")
    return load_settings(overrides={
        "user_agent": USER_AGENT, "connect_to": f"*.test=127.0.0.1:{server.port}", "allow_networks": "127.0.0.0/8",
        "min_delay": 0.0, "db_path": str(tmp_path / "crawl.duckdb"), "data_dir": str(tmp_path / "data"),
        "seeds_file": str(seeds), "query_log_dir": str(tmp_path / "log"), "policy": "bfs", "batch_size": 40,
        "per_host_cap": 40, "parse_workers": 1, "url_exclude": "/private/", "refresh_policy": "none",
        # the real page links to the rest of the Python docs, which this server does not hold
        "url_include": r"^http://(site\.test/|python\.docs\.test/about\.html)"}, environ={})


def state(s: Settings) -> dict[str, set[tuple]]:
    with connect(s, read_only=True) as con:
        return {"pages": set(con.execute("SELECT url, duplicate_of, folded_cycle FROM pages").fetchall()),
                "frontier": set(con.execute("SELECT url, status, status_cycle FROM frontier").fetchall())}


def test_pages_naming_a_canonical_of_their_host_are_folded_into_it(crawl: Settings) -> None:
    stages.init(crawl)
    after = {}
    for day in (1, 2, 3):
        stages.run_cycle(crawl, date(2026, 11, day), progress=lambda m: None)
        after[day] = state(crawl)
    with connect(crawl, read_only=True) as con:
        def rows(sql: str) -> set[tuple]:
            return set(con.execute(sql).fetchall())

        assert rows("SELECT url, duplicate_of, kind, folded_cycle FROM v_duplicates") == {
            (f"{SITE}/index.html", f"{SITE}/", "canonical", 2),        # / was stored in cycle 1
            (VARIANT, ABOUT, "canonical", 2),                          # the same bytes: about.html is the original
            (f"{SITE}/chain-b", f"{SITE}/chain-c", "canonical", 2),
            (f"{SITE}/guide?view=print", f"{SITE}/guide", "canonical", 3),  # waited for /guide, fetched in cycle 3
            (f"{SITE}/doc", f"{SITE}/doc.html", "canonical", 3),      # from the Link header
        }
        assert rows("SELECT url, outcome FROM v_canonicals WHERE outcome <> 'folded'") == {
            (f"{SITE}/chain-a", "chain"),  # chain-b names chain-c: not followed
            (f"{SITE}/cross", "other_host"),
            (f"{SITE}/coreapi/index.html", "target_gone"),
            (f"{SITE}/moved-canon", "target_redirected_permanent"),
            (f"{SITE}/private-canon", "refused_url_excluded"),
        }
        assert rows("SELECT url FROM frontier WHERE status = 'duplicate'") == {
            (url,) for url, *_ in rows("SELECT * FROM v_duplicates")}
        # a canonical URL is admitted like a link, through the crawl scope; another host's is only recorded
        assert rows(f"SELECT source, hops FROM frontier WHERE url = '{SITE}/guide'") == {("canonical", 1)}
        assert rows("SELECT url FROM frontier WHERE host = 'other.test'") == set()
        assert rows(f"SELECT reason FROM url_rejects WHERE src = '{SITE}/private-canon'") == {("url_excluded",)}
        # a duplicate's out-links count
        assert rows(f"SELECT in_links FROM frontier WHERE url = '{SITE}/only-from-index'") == {(1,)}
        # not indexed, not a result
        indexed = {url for url, in rows("SELECT url FROM posting_docs")}
        assert ABOUT in indexed and f"{SITE}/guide" in indexed and f"{SITE}/chain-a" in indexed
        assert not indexed & {url for url, *_ in rows("SELECT * FROM v_duplicates")}
        results = rows("SELECT query, url FROM query_results WHERE cycle = 3")
        assert ("guide", f"{SITE}/guide") in results and ("about these documents", ABOUT) in results
        assert not {url for _, url in results} & {url for url, *_ in rows("SELECT * FROM v_duplicates")}
        # the date a page declares in a meta tag is kept; a <time> element is not a page's date
        assert rows("SELECT url, date FROM pages WHERE date IS NOT NULL") == {(f"{SITE}/", date(2024, 5, 6))}
        assert rows(f"SELECT canonical_link FROM pages WHERE url = '{ABOUT}'") == {(ABOUT,)}

    # A re-run of cycle 3 first undoes its folds of pages stored earlier, then folds them again.
    with connect(crawl) as con, transaction(con):
        run_sql(con, "pipeline/update/rollback_cycle", cycle=3)
        undone = {"pages": set(con.execute("SELECT url, duplicate_of, folded_cycle FROM pages").fetchall()),
                  "frontier": set(con.execute("SELECT url, status, status_cycle FROM frontier").fetchall())}
    assert undone == after[2]
    stages.update_tables(crawl, 3, shard_storage.stored_shards(crawl, 3))
    assert state(crawl) == after[3]
