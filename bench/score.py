"""Cost of one cycle's ordering stages (refit, select_needy, score, materialize) on a large synthetic crawl.

    .venv/bin/python bench/score.py [--scale 1 [3 10 ...]] [--batch N] [--dir DIR] [--state DIR [--build-only]]
                                    [--table]

Builds, in a fresh DuckDB file under ``--dir`` (default: a temporary folder), the state that cycle C = 6 finds after
its update stage. Sizes at scale 1: 1,000,000 frontier URLs on 20,000 hosts, 200,000 crawled pages, 5,000,000 links,
and a query-log partition of 100,000 distinct queries (the same in every cycle). ``--scale`` multiplies URLs, hosts
and links; crawled pages grow as scale ** log10(5) (the crawled share of the frontier falls from 20 % to 10 % at
scale 10) and queries as min(scale, 1) (the query log is the search engine's, not the crawl's): scale 10 is
10,000,000 URLs, 1,000,000 pages, 50,000,000 links and 100,000 queries. ``--state DIR`` keeps each scale's built
state in DIR/scale-S and starts from a copy of it when it holds one of the same sizes (to time the stages again
without building; the build's seconds are kept with it). Words come from a 50,000-word vocabulary with Zipf
frequencies; link targets follow a power law; anchors mostly repeat words of the URL they point at.

History (cycles 1..C-1) gets its derived state the way the product builds it: the n-gram, evidence and ranker
indexes of refit C-1, in-links and PageRank, plus the reference results of cycle C-1, what the changed checks
moved (``check_moves``) and improvement history, S' and the top-K odds trained in refit C-1 (which cycle C's refit
keeps while their error on its held-out queries stays within ``refit_drift``: setting ``recompute``), and the change
history of re-fetched pages: every page fetched before C-1 was checked 0-3 times in cycles 2..C-1 (``page_checks``
with the outcomes of ``contracts/url_states.py``: changed, unchanged, not modified, failed; hosts change in bursts),
its ``pages`` row as update leaves it (``cycle``, ``checked_cycle``, ``changed_cycle``). Then cycle C's update
arrives (5% of each size: newly crawled pages, their out-links, newly found URLs; and one stored page in 50 checked
again, three in ten of them found changed, whose replaced copies score ranks), and the stages of cycle C run with
policy hybrid and refresh policy impact, each in its own process as Airflow runs them; each reports its wall time
and its process's peak RSS. Every stored page is a refresh candidate (``min_revisit_cycles`` 1): score values them
all (``refresh.score_refresh``) and materialize divides the batch between them and the new URLs
(``refresh.new_impact``, ``refresh.divide``); the seconds of these refresh parts are printed with their stage
(``refresh part``) and after the batch's split (refreshes and new URLs in ``batches``).

Then the quality gates of the same cycle, as crawl_cycle's gate tasks run them (fetch and parse together, update,
materialize), each in its own process: validation seconds, with the import of Great Expectations apart; cycle C's
batch, fetch log and one shard of fetch and parse output are written for them.

References, in the same run on copies of the same state, before the stages: refit with ``recompute`` full (every
model trained again), and score and materialize under the pure-SQL policy ``indegree`` (and refresh policy impact).
Each copy is removed before the next is made, so the disk holds at most twice the state (three times with ``--state``).
The goals on 2 cores, for the four stages together (``score_cycle_seconds``) and the peak RSS of any of them
(``peak_rss_GiB``): at scale 1, 120 s and 4 GiB; at scale 10, 600 s and 16 GiB. A scale between is held to the
goal of the next larger one, and the exit code is 1 when the run misses it (0 below scale 1). The last lines are
``refresh_seconds=<refresh part of score + materialize>``, ``peak_rss_GiB=``, ``score_cycle_seconds=`` and
``cycle_over_indegree=<refit + select_needy + score + materialize> / <score + materialize under indegree>``, of
the last scale given; ``refit_over_full_recompute=`` comes before them.

``--batch N`` makes cycle C's update N crawled pages (with the links and new URLs of as many pages of the scale) and
the next batch N URLs at every scale, for a growth line whose work per cycle holds still while the crawl grows; its
states are kept in DIR/scale-S-batchN and its results apart.

Each timed scale's figures are kept in ``bench/results/score-scale<S>.json`` (with ``--batch``,
``score-scale<S>-batch<N>.json``): ``refresh_seconds`` per stage and ``batch``, its refreshes, new URLs and the
refresh candidates kept in ``refresh_scores``. With two scales or more kept, the run ends with a table of each
stage's seconds and peak RSS at every kept scale, the refresh part's seconds, the four stages over the indegree
cycle of the same run, and each row's growth exponent between them (seconds ~ URLs ** exponent), next to the
exponent n log n would have (``--table`` prints it alone). The load average at the start and the end of each run
says whether the machine was idle.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from types import ModuleType

import duckdb
import pyarrow.parquet as pq

from crawlcycle.contracts import shard_files
from crawlcycle.contracts.url_states import CheckOutcome
from crawlcycle.db import connect, migrate
from crawlcycle.models import refit, score_model
from crawlcycle.ordering import refresh
from crawlcycle.pipeline import shard_storage, stages
from crawlcycle.pipeline.stage_order import TASKS
from crawlcycle.quality import gates
from crawlcycle.ranking import evidence_index, ngram_index, ranker
from crawlcycle.settings import Settings
from crawlcycle.settings.sources import load_settings, with_overrides

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CYCLE = 6  # the timed cycle; 1..CYCLE-1 are history
FIRST_INTERVAL = date(2026, 11, 1)
SIZES = {"urls": 1_000_000, "pages": 200_000, "links": 5_000_000, "queries": 100_000, "hosts": 20_000}
NEW_SHARE = 0.05  # share of the URLs, pages and links that cycle C's update brought
VOCAB = 50_000
STAGES = ("refit", "select_needy", "score", "materialize")
# The refresh part of a stage: the functions of crawlcycle.ordering.refresh it calls. Score values the candidates
# (score_refresh: candidates, moving share, policy SQL); materialize gives the new URLs their expected impact, reads the
# scored refreshes and divides the batch (the robots.txt check of the refreshes is not counted).
REFRESH_PARTS = {"score": ("score_refresh",), "materialize": ("new_impact", "scored", "divide")}
STATE_FORMAT = 6  # of a kept state (sizes.json): raise it when build() writes something else
GOALS = {1: (120.0, 4 << 30), 10: (600.0, 16 << 30)}  # scale: (seconds of the four stages, peak RSS bytes)
DUCKDB_MEMORY = {1: "2GB", 10: "10GB"}  # scale: DuckDB's memory_limit for the stages
BUILD_MEMORY = "14GB"
PAGE_GROWTH = math.log10(5)  # pages grow 5x for 10x the URLs
ROBOTS = "User-agent: *\nDisallow: /baba/\n"  # 'baba' is the most frequent word: some URLs of every host

MACROS = (
    "CREATE TEMP MACRO pick(a, b, n) AS (hash(a, b) % n)::BIGINT",  # uniform over 0..n-1
    "CREATE TEMP MACRO unit(a, b) AS pick(a, b, 1000000) / 1000000.0",
    # 0..n-1 with P(k) ~ 1 / (k + 1): Zipf
    "CREATE TEMP MACRO zipf(a, b, n) AS floor(pow(n + 1, unit(a, b)))::BIGINT - 1",
    # 0..n-1 with a power-law head: 1% of draws give 0 at n = 1M
    "CREATE TEMP MACRO skew(a, b, n) AS floor(n * pow(unit(a, b), 3))::BIGINT",
    "CREATE TEMP MACRO syl(j) AS "
    "substr('bcdfghjklmnprstvwxyz', (j // 5)::INT + 1, 1) || substr('aeiou', (j % 5)::INT + 1, 1)",
    # word of rank k: two or three syllables (distinct for k < 500,000), one word in 23 ending in a number
    "CREATE TEMP MACRO word(k) AS syl(k % 100) || syl((k // 100) % 100) || "
    "CASE WHEN k >= 10000 THEN syl(k // 10000) ELSE '' END || CASE WHEN k % 23 = 7 THEN (k % 97)::VARCHAR ELSE '' END",
    f"CREATE TEMP MACRO words(a, b, n) AS array_to_string(list_transform(range(n), "
    f"lambda j: word(zipf(a * 1000 + j, b, {VOCAB}))), ' ')",
)

# Every URL, numbered by discovery: the history's first, then those cycle C found. w1..w3: word ranks of the path.
URLS = """
CREATE TEMP TABLE u AS
WITH cand AS (
    SELECT i, 'h' || pick(i, 'host', $hosts) || '.bench.test' AS host,
           zipf(i, 'w1', $vocab) AS w1, zipf(i, 'w2', $vocab) AS w2, zipf(i, 'w3', $vocab) AS w3
    FROM range($urls + $urls // 50 + 100) t(i)
), named AS (
    SELECT *, 'http://' || host || '/' || word(w1) || '/' || word(w2) || '-' || word(w3) AS url FROM cand
), kept AS (
    SELECT * FROM named QUALIFY row_number() OVER (PARTITION BY url ORDER BY i) = 1 ORDER BY i LIMIT $urls
), numbered AS (
    SELECT row_number() OVER (ORDER BY i) AS seq, url, host, w1, w2, w3 FROM kept
)
SELECT *, CASE WHEN seq <= $old THEN (seq - 1) * $cycle // $old ELSE $cycle END AS first_seen FROM numbered
"""

# Crawled pages in crawl order (earlier discoveries first, loosely): the history's, then cycle C's batch.
PAGES = """
CREATE TEMP TABLE pg AS
SELECT row_number() OVER (ORDER BY o) AS pidx, seq, url, host, w2, w3,
       CASE WHEN row_number() OVER (ORDER BY o) <= $old
            THEN first_seen + 1 + pick(seq, 'cycle', $cycle - 1 - first_seen) ELSE $cycle END AS cycle
FROM (SELECT *, seq * unit(seq, 'crawl') AS o FROM u WHERE first_seen <= $cycle - 2 ORDER BY o LIMIT $pages)
"""

INSERT_PAGES = """
INSERT INTO pages (url, host, cycle, status, content_type, title, text, lang, content_hash, noindex, bytes,
                   checked_cycle, changed_cycle)
SELECT url, host, cycle, 200, 'text/html', title, text, 'en', md5(text), false, 3 * length(text) + 2000, cycle, cycle
FROM (SELECT *, word(w2) || ' ' || word(w3) || ' ' || words(seq, 'title', 1 + pick(seq, 'tn', 4)) AS title,
             words(seq, 'text', 70 + pick(seq, 'xn', 21)) AS text
      FROM pg WHERE cycle BETWEEN $lo AND $hi)
"""

# $count new distinct links from the pages crawled in cycles $lo..$hi to URLs 1..$targets, power-law over a scrambled
# order of the targets; anchors: 1-3 words of the target URL's path, one in five other words.
INSERT_LINKS = """
INSERT INTO links (src, dst, anchor, nofollow, cycle)
WITH cand AS (
    SELECT p.url AS src, p.pidx * 1000 + r.j AS k,
           1 + (skew(p.pidx * 1000 + r.j, 'dst', $targets) * 2147483647) % $targets AS dseq
    FROM pg p CROSS JOIN range($per_page) r(j)
    WHERE p.cycle BETWEEN $lo AND $hi
), anchored AS (
    SELECT c.src, d.url AS dst, c.k,
           CASE pick(c.k, 'anchor', 10)
               WHEN 0 THEN words(c.k, 'anchor', 1 + pick(c.k, 'an', 3))
               WHEN 1 THEN words(c.k, 'anchor', 1 + pick(c.k, 'an', 3))
               WHEN 2 THEN word(d.w1)
               WHEN 3 THEN word(d.w3)
               WHEN 4 THEN word(d.w1) || ' ' || word(d.w2) || ' ' || word(d.w3)
               ELSE word(d.w2) || ' ' || word(d.w3) END AS anchor
    FROM cand c JOIN u d ON d.seq = c.dseq
)
SELECT a.src, a.dst, a.anchor, false, $hi FROM anchored a
-- only links from the same pages can repeat one: those stored with the same cycle
ANTI JOIN (SELECT src, dst, anchor FROM links WHERE cycle = $hi) l
    ON l.src = a.src AND l.dst = a.dst AND l.anchor = a.anchor
QUALIFY row_number() OVER (PARTITION BY a.src, a.dst, a.anchor ORDER BY a.k) = 1
ORDER BY hash(a.k) LIMIT $count
"""

# Re-fetches of the history's pages (cycles 2..C-1), as update records them: each page fetched before C-1 was
# checked 0-3 times (uniformly), in consecutive cycles from a drawn start. Hosts change in bursts: in a cycle with a
# release (one in four per host) a check finds the page changed with P 0.7, else 0.05. Half the hosts answer
# conditional requests (an unchanged page is not modified, 304), the others send the page again (unchanged, 200);
# one check in 40 gets no answer (failed: it tells nothing and leaves checked_cycle). The outcomes and what they tell
# are contracts/url_states.py's (check_found_change). No check found a page gone: every fetched page stays stored.
CHECKS = """
INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed, simhash_bits)
WITH planned AS (
    SELECT url, host, seq, cycle AS fetched, least(pick(seq, 'checks', 4), $cycle - 1 - cycle) AS n
    FROM pg WHERE cycle < $cycle - 1
), drawn AS (
    SELECT url, host, fetched, fetched + pick(seq, 'start', $cycle - fetched - n) + unnest(range(1, n + 1)) AS cycle
    FROM planned WHERE n > 0
), told AS (
    SELECT *, CASE WHEN pick(url, cycle, 40) = 0 THEN $failed
                   WHEN unit(url, cycle) < CASE WHEN unit(host, cycle) < 0.25 THEN 0.7 ELSE 0.05 END THEN $changed
                   WHEN unit(host, 'conditional') < 0.5 THEN $not_modified ELSE $unchanged END AS outcome
    FROM drawn
)
SELECT cycle, url, host, outcome,
       CASE outcome WHEN $failed THEN 503 WHEN $not_modified THEN 304 ELSE 200 END,
       coalesce(max(cycle) FILTER (WHERE outcome <> $failed) OVER (PARTITION BY url ORDER BY cycle
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), fetched),
       check_found_change(outcome), CASE outcome WHEN $changed THEN 3 + pick(url, cycle, 30) WHEN $unchanged THEN 0 END
FROM told ORDER BY cycle, url
"""

# The stored pages after those checks (check_pages and merge_parse): a changed page's row is the copy of its last
# changed check, an answered check is the page's checked_cycle.
CHECKED_PAGES = """
UPDATE pages p SET cycle = coalesce(c.changed_cycle, p.cycle), changed_cycle = coalesce(c.changed_cycle, p.cycle),
                   checked_cycle = c.checked_cycle
FROM (SELECT url, max(cycle) FILTER (WHERE changed) AS changed_cycle,
             max(cycle) FILTER (WHERE changed IS NOT NULL) AS checked_cycle
      FROM page_checks GROUP BY url HAVING checked_cycle IS NOT NULL) c
WHERE p.url = c.url
"""

# What the history's checks that found a change moved (check_moves, as the score stage of each cycle writes them): each
# compared in 1-3 queries, carrying up to 4 slots, half of them moving all of it and the others nothing.
HISTORY_MOVES = """
INSERT INTO check_moves (cycle, url, queries, carried, moved)
SELECT cycle, url, 1 + pick(url, cycle, 3), round(4 * unit(url, cycle), 6),
       CASE WHEN pick(url, cycle, 2) = 0 THEN round(4 * unit(url, cycle), 6) ELSE 0 END
FROM page_checks WHERE changed
"""

# Cycle C's checks, as check_pages leaves them: one stored page in 50 fetched again, three in ten of those found
# changed (a new text of other words); the changed pages' copies kept in replaced_pages and their rows rewritten, so
# that refit C indexes them anew and score C ranks the replaced copies (refresh.record_moves).
CYCLE_CHECKS = """
CREATE TEMP TABLE rc AS
SELECT p.url, p.host, g.seq, coalesce(p.checked_cycle, p.cycle) AS previous, pick(p.url, 'changed', 10) < 3 AS changed
FROM pages p JOIN pg g USING (url) WHERE p.cycle < $cycle AND pick(p.url, 'recheck', 50) = 0;
INSERT INTO page_checks (cycle, url, host, outcome, status, previous_cycle, changed, simhash_bits)
SELECT $cycle, url, host, CASE WHEN changed THEN $changed ELSE $unchanged END, 200, previous, changed,
       CASE WHEN changed THEN 12 ELSE 0 END
FROM rc ORDER BY url;
INSERT INTO replaced_pages BY NAME
SELECT p.*, $cycle AS replaced_cycle FROM pages p SEMI JOIN rc ON rc.url = p.url AND rc.changed;
UPDATE pages p SET text = r.text, content_hash = md5(r.text), cycle = $cycle, changed_cycle = $cycle,
                   checked_cycle = $cycle
FROM (SELECT url, words(seq, 'recheck', 70 + pick(seq, 'rn', 21)) AS text FROM rc WHERE changed) r
WHERE p.url = r.url;
UPDATE pages p SET checked_cycle = $cycle FROM rc WHERE rc.url = p.url AND NOT rc.changed;
DROP TABLE rc;
"""

# Distinct queries of 1-3 words; frequencies fall as 1 / rank, ranks ordered by how often the query was drawn, so
# queries of frequent words are frequent.
QUERY_LOG = """
INSERT INTO query_log (partition, query, frequency)
SELECT $partition, query, ceil(10.0 * $queries / row_number() OVER (ORDER BY draws DESC, hash(query)))
FROM (SELECT query, count(*) AS draws, min(i) AS first
      FROM (SELECT i, words(i, 'query', 1 + pick(i, 'qn', 3)) AS query FROM range(2 * $queries) t(i))
      GROUP BY query ORDER BY first LIMIT $queries)
"""


def in_folder(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """Point the saved models of a copied state at the copy's own files."""
    con.execute("UPDATE model_runs SET file = ? || '/models/' || regexp_extract(file, '[^/]+$') WHERE file IS NOT NULL",
                [str(folder)])


def sizes(scale: float, batch: int | None = None) -> dict[str, int]:
    """The state's sizes at ``scale``; cycle C's update is NEW_SHARE of each, or with ``batch`` that many pages (and
    the links and new URLs of as many pages of the scale)."""
    growth = {"pages": scale ** PAGE_GROWTH, "queries": min(scale, 1.0)}
    n = {k: max(1, round(v * growth.get(k, scale))) for k, v in SIZES.items()}
    share = batch / n["pages"] if batch else NEW_SHARE
    n.update({f"new_{k}": max(1, round(n[k] * share)) for k in ("urls", "pages", "links")})
    return n


def batch_suffix(batch: int | None) -> str:
    """What names a fixed batch's kept states and results apart from the default's."""
    return f"-batch{batch}" if batch else ""


def bench_settings(folder: Path, batch_size: int, policy: str = "hybrid", scale: float = 1.0) -> Settings:
    # DuckDB gets part of the stage's memory goal (2 GB at scale 1, the default; 10 GB at scale 10, where 8 GB ran
    # out in the evidence match): the rest is for the frames and arrays the stages hold in Python.
    memory = DUCKDB_MEMORY[goal_scale(scale)]
    return load_settings(environ={}, overrides={
        "user_agent": "crawlcycle-bench/0.1 (+http://127.0.0.1/contact)", "db_path": str(folder / "crawl.duckdb"),
        "data_dir": str(folder), "policy": policy, "batch_size": batch_size, "duckdb_threads": 2,
        "duckdb_memory_limit": memory, "refresh_policy": "impact", "min_revisit_cycles": 1})


def build(con: duckdb.DuckDBPyConnection, settings: Settings, n: dict[str, int], say: Callable[[str], None]) -> None:
    """Crawl state as cycle ``CYCLE``'s update stage leaves it."""
    c, old_urls, old_pages = CYCLE, n["urls"] - n["new_urls"], n["pages"] - n["new_pages"]
    partition = FIRST_INTERVAL + timedelta(days=c - 1)
    migrate(con)
    # The build is not timed: more memory than the stages get spares it spilling at scale 10.
    con.execute(f"SET memory_limit = '{BUILD_MEMORY}'")
    for macro in MACROS:
        con.execute(macro)
    con.execute("INSERT INTO cycles (cycle, interval_start, policy, status, started_at, finished_at, stage_seconds) "
                "SELECT k, $first + (k - 1)::INT, 'hybrid', CASE WHEN k < $cycle THEN 'done' ELSE 'running' END, "
                "now(), CASE WHEN k < $cycle THEN now() END, '{}' FROM range(1, $cycle + 1) t(k)",
                {"first": FIRST_INTERVAL, "cycle": c})
    con.execute(URLS, {"hosts": n["hosts"], "vocab": VOCAB, "urls": n["urls"], "old": old_urls, "cycle": c})
    con.execute(PAGES, {"pages": n["pages"], "old": old_pages, "cycle": c})
    say("URLs and pages drawn")
    con.execute("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source, status, status_cycle) "
                "SELECT u.url, u.host, u.first_seen, u.seq, 'link', CASE WHEN p.cycle IS NULL THEN 'unfetched' "
                "ELSE 'fetched' END, p.cycle FROM u LEFT JOIN pg p ON p.seq = u.seq AND p.cycle < $cycle "
                "WHERE u.seq <= $old", {"old": old_urls, "cycle": c})
    con.execute(INSERT_PAGES, {"lo": 1, "hi": c - 1})
    told = (CheckOutcome.FAILED, CheckOutcome.CHANGED, CheckOutcome.NOT_MODIFIED, CheckOutcome.UNCHANGED)
    con.execute(CHECKS, {"cycle": c, **{o.value: o.value for o in told}})
    con.execute(CHECKED_PAGES)
    con.execute("INSERT INTO hosts (host, delay, errors, updated_cycle) "
                "SELECT DISTINCT host, 1.0, 0, $cycle - 1 FROM pg", {"cycle": c})
    con.execute("INSERT INTO robots (origin, host, status, fetched_at, robots_txt, updated_cycle) "
                "SELECT DISTINCT 'http://' || host, host, 200, epoch(now()), $robots, $cycle - 1 FROM pg",
                {"robots": ROBOTS, "cycle": c})
    # every origin answered its last try: otherwise materialize gives its URLs no batch slot before a probe
    con.execute("INSERT INTO origin_tries (cycle, origin, host, probe, tried_at, failures, state) "
                "SELECT updated_cycle, origin, host, false, fetched_at, 0, 'ok' FROM robots")
    checks = con.execute("SELECT count(*), count(DISTINCT url), count(*) FILTER (WHERE changed) FROM page_checks") \
        .fetchone()
    say(f"history: {old_urls} URLs, {old_pages} pages ({checks[1]} checked again: {checks[0]} checks, {checks[2]} "
        f"found a change), hosts")
    links = {"targets": old_urls, "per_page": n["links"] // n["pages"] + 6, "lo": 1, "hi": c - 1,
             "count": n["links"] - n["new_links"]}
    con.execute(INSERT_LINKS, links)
    con.execute(QUERY_LOG, {"partition": partition, "queries": n["queries"]})
    # the earlier cycles' partitions hold the same queries, as a steady workload's log does
    con.execute("INSERT INTO query_log (partition, query, frequency) SELECT $first + (k - 1)::INT, query, frequency "
                "FROM query_log CROSS JOIN range(1, $cycle) t(k)", {"first": FIRST_INTERVAL, "cycle": c})
    say(f"history: {links['count']} links (all of cycle {c - 1}), {n['queries']} queries")

    grams = ngram_index.update(con, settings, c - 1)
    say(f"history: n-gram index {grams}")
    evidence = evidence_index.update(con, c - 1)
    say(f"history: evidence index {evidence}")
    indexed = ranker.index_pages(con, c - 1)
    say(f"history: ranker index {indexed}")
    graph = refit.refit_link_graph(con, c - 1)
    say(f"history: link graph {graph}")
    # The reference top K of every query in cycle C-1, and improvement history for the improvability fit.
    ranked = ranker.rank_queries(con, settings, c - 1)
    con.execute(HISTORY_MOVES)
    con.execute("INSERT INTO query_improvement (cycle, query, prior_avg_score, improvement) "
                "SELECT k, query, x, floor(6 * exp(-x / 4) * unit(query, k + 100))::INT FROM "
                "(SELECT k, query, round(12 * unit(query, k), 6) AS x "
                " FROM (SELECT DISTINCT query FROM query_log) CROSS JOIN range(2, $cycle) t(k))", {"cycle": c})
    say(f"history: {ranked.rows} results of cycle C-1, what the history's changed checks moved, and improvement "
        "history")
    fit = score_model.fit(con, settings, c - 1)
    say(f"history: S' and the top-K odds of refit C-1 (validation MAE {fit.get('validation_mae')})")

    # Cycle C's update: its batch crawled, their out-links, the URLs first found in them.
    con.execute("INSERT INTO frontier (url, host, first_seen_cycle, discovery_seq, source) "
                "SELECT url, host, first_seen, seq, 'link' FROM u WHERE seq > $old", {"old": old_urls})
    con.execute("UPDATE frontier SET status = 'fetched', status_cycle = $cycle "
                "WHERE discovery_seq IN (SELECT seq FROM pg WHERE cycle = $cycle)", {"cycle": c})
    con.execute(INSERT_PAGES, {"lo": c, "hi": c})
    con.execute("INSERT INTO links (src, dst, anchor, nofollow, cycle) "
                "SELECT p.url, u.url, word(u.w2) || ' ' || word(u.w3), false, $cycle FROM u "
                "JOIN pg p ON p.pidx = $old_pages + 1 + u.seq % $new_pages WHERE u.seq > $old_urls",
                {"cycle": c, "old_pages": old_pages, "new_pages": n["new_pages"], "old_urls": old_urls})
    con.execute(INSERT_LINKS, {"targets": n["urls"], "per_page": n["new_links"] // n["new_pages"] + 6, "lo": c,
                               "hi": c, "count": max(0, n["new_links"] - n["new_urls"])})
    for statement in CYCLE_CHECKS.split(";\n")[:-1]:
        con.execute(statement, {k: v for k, v in {"cycle": c, "changed": CheckOutcome.CHANGED.value,
                                                  "unchanged": CheckOutcome.UNCHANGED.value}.items()
                                if f"${k}" in statement})
    rechecked = con.execute("SELECT count(*), count(*) FILTER (WHERE changed) FROM page_checks WHERE cycle = ?",
                            [c]).fetchall()[0]
    say(f"cycle {c} update: {n['new_pages']} pages, {n['new_links']} links, {n['new_urls']} new URLs; "
        f"{rechecked[0]} stored pages checked, {rechecked[1]} found changed")
    write_shard(con, settings, c)
    say(f"cycle {c} batch, fetch log and one shard of fetch and parse output, for the quality gates")
    con.execute("CHECKPOINT")


def write_shard(con: duckdb.DuckDBPyConnection, settings: Settings, c: int) -> None:
    """What cycle C's fetch and parse left for the gates: its batch and fetch log in the tables, and the shard
    files; requests to a host follow each other 1.5 s apart (the delay is 1 s)."""
    con.execute("INSERT INTO batches (fetch_cycle, score_cycle, url, host, rank, policy, priority) "
                "SELECT $cycle, $cycle - 1, url, host, row_number() OVER (ORDER BY url), 'hybrid', 1.0 "
                "FROM pages WHERE cycle = $cycle", {"cycle": c})
    con.execute("INSERT INTO fetch_log (cycle, shard, url, host, final_url, status, bytes, content_type, started_at, "
                "finished_at, elapsed_ms, truncated, outcome) "
                "SELECT $cycle, 0, url, host, url, 200, bytes, 'text/html', t, t + 0.1, 100, false, 'fetched' "
                "FROM (SELECT *, 1.5 * row_number() OVER (PARTITION BY host ORDER BY url) AS t FROM pages "
                "WHERE cycle = $cycle)", {"cycle": c})
    shard = Path(shard_storage.shard_location(settings, c, 0))
    shard.mkdir(parents=True)
    for name, select in (
            ("fetch_log", "SELECT url, host, status, content_type, outcome, NULL::VARCHAR AS error_class, started_at, "
                          "finished_at FROM fetch_log WHERE cycle = $cycle"),
            ("requests", "SELECT host, url, started_at, finished_at FROM fetch_log WHERE cycle = $cycle"),
            ("hosts", "SELECT DISTINCT host, NULL::DOUBLE AS crawl_delay FROM fetch_log WHERE cycle = $cycle"),
            ("pages", "SELECT p.url, p.status, p.content_type, p.text, count(l.dst)::INTEGER AS n_links FROM pages p "
                      "LEFT JOIN links l ON l.src = p.url WHERE p.cycle = $cycle GROUP BY ALL"),
            ("links", "SELECT src, dst, anchor FROM links WHERE cycle = $cycle")):
        con.execute(f"COPY ({select}) TO '{shard / name}.parquet' (FORMAT parquet)", {"cycle": c})
    for name, schema in {**shard_files.FETCH_OUTPUTS, **shard_files.PARSE_OUTPUTS}.items():
        if not (shard / name).exists():  # the gates check that a shard holds every file a fetch and a parse write
            pq.write_table(schema.empty_table(), shard / name)


def goal_scale(scale: float) -> int:
    """The scale whose goals and DuckDB memory a run at ``scale`` takes: the smallest goal scale >= it."""
    return min((k for k in GOALS if k >= scale), default=max(GOALS))


def goal(scale: float) -> tuple[float, int]:
    """(seconds, peak RSS bytes) a run at ``scale`` is held to."""
    return GOALS[goal_scale(scale)]


def peak_rss() -> int:
    """Peak resident set of this process in bytes. VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the
    parent into a spawned process, so it would report this bench's own peak."""
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text())[1]) * 1024


def time_calls(module: ModuleType, names: tuple[str, ...]) -> dict[str, float]:
    """Make each call of the functions ``names`` of ``module`` (called as ``module.name``) add its seconds to the
    returned dict, in this process."""
    spent = dict.fromkeys(names, 0.0)

    def timer(name: str, fn: Callable) -> Callable:
        def timed(*args: object, **kwargs: object) -> object:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - t
        return timed

    for name in names:
        setattr(module, name, timer(name, getattr(module, name)))
    return spent


def run_stage(name: str, settings: Settings) -> tuple[float, int, object, float]:
    """One stage of cycle ``CYCLE``, in a process of its own: (seconds, peak RSS bytes, the stage's result, seconds of
    its refresh part)."""
    spent = time_calls(refresh, REFRESH_PARTS.get(name, ()))
    t = time.perf_counter()
    result = TASKS[name].run(settings, {"cycle": CYCLE})
    return time.perf_counter() - t, peak_rss(), result, sum(spent.values())


def run_gates(names: tuple[str, ...], settings: Settings) -> tuple[float, float, int]:
    """One gate task, in a process of its own: (GX import seconds, validation seconds, peak RSS bytes)."""
    t = time.perf_counter()
    gates.load_gx()
    imported = time.perf_counter() - t
    shards = shard_storage.stored_shards(settings, CYCLE)
    t = time.perf_counter()
    for gate in names:
        stages.gate(settings, gate, CYCLE, shards)
    return imported, time.perf_counter() - t, peak_rss()


def in_child(fn: Callable[..., tuple], *args: object) -> tuple:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


@contextmanager
def state_copy(folder: Path, name: str) -> Iterator[None]:
    """A copy of the state in ``folder / name``, its files pointing at the copy, removed afterwards."""
    shutil.copytree(folder, folder / name, ignore=shutil.ignore_patterns("duckdb-tmp"))
    with duckdb.connect(str(folder / name / "crawl.duckdb")) as con:
        in_folder(con, folder / name)
    try:
        yield
    finally:
        shutil.rmtree(folder / name)


def run_scale(scale: float, state_root: Path | None, build_only: bool, folder_root: Path | None,
              batch: int | None = None) -> dict:
    """Build (or copy) the state of ``scale`` and time its stages; return what bench/results keeps of the run."""
    n = sizes(scale, batch)
    state = state_root / f"scale-{scale:g}{batch_suffix(batch)}" if state_root else None
    if folder_root:
        folder_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder_root) as tmp:
        folder = Path(tmp)
        settings = bench_settings(folder, n["new_pages"], scale=scale)
        print(f"scale={scale:g} cycle={CYCLE} " + " ".join(f"{k}={v}" for k, v in n.items())
              + f" duckdb_memory_limit={settings.duckdb_memory_limit} cpus={os.cpu_count()} "
              f"load={os.getloadavg()[0]:.1f} db={settings.db_path}", flush=True)
        t0 = time.perf_counter()

        def say(msg: str) -> None:
            print(f"  [{time.perf_counter() - t0:6.1f} s] {msg}", flush=True)

        kept = state / "sizes.json" if state else None
        run: dict = {"scale": scale, "sizes": n, "fixed_batch": batch, "load": round(os.getloadavg()[0], 1),
                     "cpus": os.cpu_count()}
        found = json.loads(kept.read_text()) if kept and kept.exists() else {}
        if found.get("format") == STATE_FORMAT and found.get("sizes") == n:
            shutil.copytree(state, folder, dirs_exist_ok=True)
            with connect(settings) as con:
                migrate(con)  # as cycle C's begin stage would: a state kept before a migration gets it
                in_folder(con, folder)
            run["build_s"] = found["build_s"]
            say(f"state copied from {state} (built in {run['build_s']:.0f} s)")
        else:
            with connect(settings) as con:
                build(con, settings, n, say)
            run["build_s"] = round(time.perf_counter() - t0, 1)
            say(f"state built in {run['build_s']:.0f} s")
            if kept:
                shutil.rmtree(state, ignore_errors=True)
                shutil.copytree(folder, state, ignore=shutil.ignore_patterns("duckdb-tmp"))
                kept.write_text(json.dumps({"sizes": n, "build_s": run["build_s"], "format": STATE_FORMAT}))
                say(f"state kept in {state}")
        run["db_MB"] = round(Path(settings.db_path).stat().st_size / 1e6)
        print(f"setup_s={time.perf_counter() - t0:.1f} db_MB={run['db_MB']}", flush=True)
        if build_only:
            return run
        # The references run first, each on its own copy of the state (the stages rewrite what they would overwrite),
        # removed before the next: at most one copy beside the state on disk.
        full = with_overrides(bench_settings(folder / "full", n["new_pages"], scale=scale), {"recompute": "full"})
        with state_copy(folder, "full"):
            run["full_refit"], _, full_result, _ = in_child(run_stage, "refit", full)
        reference = {}
        indegree = bench_settings(folder / "reference", n["new_pages"], policy="indegree", scale=scale)
        with state_copy(folder, "reference"):
            for name in ("score", "materialize"):
                reference[name], _, _, _ = in_child(run_stage, name, indegree)

        seconds, peaks, refreshing = {}, {}, {}
        for name in STAGES:
            seconds[name], peaks[name], result, part = in_child(run_stage, name, settings)
            if name in REFRESH_PARTS:
                refreshing[name] = part
            print(f"{name}: {seconds[name]:.2f} s, peak RSS {peaks[name] / (1 << 30):.2f} GiB, result {result}"
                  + (f", refresh part {part:.2f} s" if name in REFRESH_PARTS else ""), flush=True)
        with connect(settings) as con:
            scored = con.execute("SELECT count(*) FROM refresh_scores WHERE score_cycle = ?", [CYCLE]).fetchone()[0]
            kinds = dict(con.execute("SELECT kind, count(*) FROM batches WHERE fetch_cycle = ? GROUP BY kind",
                                     [CYCLE + 1]).fetchall())
        run["batch"] = {"new": kinds.get("new", 0), "refresh": kinds.get("refresh", 0), "refresh_scored": scored}
        print(f"batch of cycle {CYCLE + 1}: {run['batch']['refresh']} refreshes and {run['batch']['new']} new URLs "
              f"({scored} refresh candidates kept in refresh_scores, of {n['pages']} stored pages)", flush=True)
        # The gate tasks of crawl_cycle, on the same cycle (each in its own process, paying the GX import).
        imports, checks = [], []
        for names in (("fetch", "parse"), ("update",), ("materialize",)):
            imported, validated, peak = in_child(run_gates, names, settings)
            imports.append(imported)
            checks.append(validated)
            print(f"gate {'+'.join(names)}: validation {validated:.2f} s, GX import {imported:.2f} s, "
                  f"peak RSS {peak / (1 << 30):.2f} GiB", flush=True)
        print(f"reference (recompute full, copy of the same state): refit {run['full_refit']:.2f} s, "
              f"result {full_result}", flush=True)
        print(f"reference (policy indegree, copy of the same state): score {reference['score']:.2f} s, "
              f"materialize {reference['materialize']:.2f} s")
    total, ref = sum(seconds.values()), sum(reference.values())
    print(f"score_materialize_over_indegree={(seconds['score'] + seconds['materialize']) / ref:.2f}")
    print(f"refit_over_full_recompute={seconds['refit'] / run['full_refit']:.2f}")
    print(f"gate_validation_share={sum(checks) / (total + sum(checks)):.3f} (goal under 0.1; GX import "
          f"{sum(imports):.1f} s more over {len(imports)} gate tasks)")
    run.update(seconds={k: round(v, 2) for k, v in seconds.items()},
               peak_GiB={k: round(v / (1 << 30), 2) for k, v in peaks.items()},
               refresh_seconds={k: round(v, 2) for k, v in refreshing.items()},
               reference={k: round(v, 2) for k, v in reference.items()}, load_end=round(os.getloadavg()[0], 1))
    print(f"load: {run['load']} at the start, {run['load_end']} at the end ({os.cpu_count()} cores)")
    return run


def summary(run: dict) -> tuple[list[str], bool]:
    """The goal lines of a timed run (``cycle_over_indegree`` last) and whether it met its goals."""
    total, peak = sum(run["seconds"].values()), max(run["peak_GiB"].values())
    budget_s, budget_rss = goal(run["scale"])
    met = total <= budget_s and peak <= budget_rss / (1 << 30)
    part = run.get("refresh_seconds", {})
    return [f"refresh_seconds={sum(part.values()):.2f} (" + ", ".join(f"{k} {v:.2f}" for k, v in part.items())
            + f"; of the four stages' {total:.2f})",
            f"peak_rss_GiB={peak:.2f} (goal {budget_rss / (1 << 30):.0f} GiB)",
            f"score_cycle_seconds={total:.2f} (goal {budget_s:.0f} s: {'met' if met else 'missed'})",
            f"cycle_over_indegree={total / sum(run['reference'].values()):.2f}"], met


def growth_table(runs: list[dict]) -> str:
    """Seconds and peak RSS of each stage at each scale, the seconds of the refresh part of score and materialize
    (blank in a result kept before it was timed), and each row's growth exponent between successive scales
    (t ~ n ** e, n the frontier's URLs) next to that of n log n."""
    runs = sorted(runs, key=lambda r: r["scale"])
    rows = [*STAGES, "refresh part", "four stages", "over indegree", "build"]

    def value(run: dict, row: str) -> float | None:
        if row == "build":
            return run["build_s"]
        if row == "over indegree":
            return sum(run["seconds"].values()) / sum(run["reference"].values())
        if row == "refresh part":
            return sum(run["refresh_seconds"].values()) if "refresh_seconds" in run else None
        return sum(run["seconds"].values()) if row == "four stages" else run["seconds"][row]

    def cell(run: dict, row: str) -> str:
        if value(run, row) is None:
            return ""
        if row == "over indegree":
            return f"{value(run, row):.2f}×"
        if row in ("build", "refresh part"):
            return f"{value(run, row):.1f} s"
        peak = max(run["peak_GiB"].values()) if row == "four stages" else run["peak_GiB"][row]
        return f"{value(run, row):.1f} s, {peak:.2f} GiB"

    def exponent(a: dict, b: dict, row: str) -> str:
        if row == "over indegree" or value(a, row) is None or value(b, row) is None:
            return ""
        return f"{math.log(value(b, row) / value(a, row)) / math.log(b['sizes']['urls'] / a['sizes']['urls']):.2f}"

    steps = list(zip(runs, runs[1:], strict=False))
    urls = [r["sizes"]["urls"] for r in runs]
    nlogn = [math.log(b * math.log(b) / (a * math.log(a))) / math.log(b / a)
             for a, b in zip(urls, urls[1:], strict=False)]
    head = ["stage", *(f"scale {r['scale']:g} ({r['sizes']['urls'] / 1e6:g} M URLs)" for r in runs),
            *(f"exponent {a['scale']:g}→{b['scale']:g}" for a, b in steps)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [cell(r, row) for r in runs] + [exponent(a, b, row) for a, b in steps]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    lines.append("| n log n | " + " | ".join("" for _ in runs) + " | "
                 + " | ".join(f"{e:.2f}" for e in nlogn) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, nargs="+", default=[1.0],
                    help="one or more scales; each multiplies URLs, pages, links, queries and hosts")
    ap.add_argument("--dir", type=Path, help="folder for the databases (default: a temporary one)")
    ap.add_argument("--state", type=Path, help="folder keeping each scale's built state (scale-S/), reused when it "
                                               "holds the same sizes")
    ap.add_argument("--build-only", action="store_true", help="stop once the states are built (with --state)")
    ap.add_argument("--batch", type=int, help="the same batch (pages of cycle C's update, and the next batch) at every "
                                              "scale, instead of 5 %% of the crawled pages")
    ap.add_argument("--table", action="store_true", help="only print the growth table of the kept results")
    args = ap.parse_args()
    kept = {}
    for path in RESULTS.glob("score-scale*.json"):
        run = json.loads(path.read_text())
        if path.stem == f"score-scale{run['scale']:g}{batch_suffix(args.batch)}":  # the same batch rule's line
            kept[run["scale"]] = run
    met = True
    for scale in [] if args.table else args.scale:
        run = run_scale(scale, args.state, args.build_only, args.dir, args.batch)
        if args.build_only:
            continue
        run["commit"] = commit()
        (RESULTS / f"score-scale{scale:g}{batch_suffix(args.batch)}.json").write_text(json.dumps(run, indent=1) + "\n")
        kept[scale] = run
        lines, ok = summary(run)
        met = met and (ok or scale < 1)
        if scale != args.scale[-1]:
            print("\n".join(lines) + "\n", flush=True)
    if args.table and len(kept) < 2:
        print(f"fewer than two timed scales kept in {RESULTS.relative_to(ROOT)} "
              f"(score-scale*{batch_suffix(args.batch)}.json): no growth table yet")
    if len(kept) > 1 and not args.build_only:
        print(f"\nGrowth, from the results kept in {RESULTS.relative_to(ROOT)} "
              f"(score-scale*{batch_suffix(args.batch)}.json):")
        print(growth_table(list(kept.values())))
    if not args.table and not args.build_only:
        print("\n".join(summary(kept[args.scale[-1]])[0]))
    return 0 if met else 1


def commit() -> str:
    """The checked-out commit, so a kept result says what it measured."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
