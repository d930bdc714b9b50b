"""One typed settings object for the whole product, declared in sections.

Each setting belongs to one section (a TOML table: ``[fetch]``, ``[politeness]``, ...) and declares its own
constraints, so validation is one loop over the fields plus the few rules that relate two settings. Names are
unique across sections: the environment (``CRAWLCYCLE_<NAME>``), the CLI flags (``--<name>``) and the code
(``settings.<name>``) use the name alone.

Loaded settings know where each value not at its default came from (``Settings.sources``): a cycle records them
when it begins, and its later tasks run with that record (:meth:`Settings.record`), but for the settings in ``LIVE``.
A bad value raises ``SettingsError`` whose message is one line naming the setting and the reason.

Parts: this module declares the settings; ``values`` holds the checks and parsers of their values, ``sources`` reads
them from the file, the environment, the flags, a run's parameters and a cycle's record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from crawlcycle.contracts.canonical import UrlRules
from crawlcycle.contracts.errors import InputError
from crawlcycle.contracts.policies import NAMES as POLICIES
from crawlcycle.contracts.policies import REFERENCE_NAMES
from crawlcycle.contracts.refresh_policies import NAMES as REFRESH_POLICIES
from crawlcycle.settings.values import (
    connect_routes,
    date_check,
    domain_list,
    domain_list_check,
    embedding_model_check,
    field_numbers,
    field_numbers_check,
    items,
    memory_check,
    networks_check,
    policy_check,
    problem,
    regex_check,
    routes_check,
    schedule_check,
)

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
ODDS_BARS = ("crawled", "frontier")
HYBRID_MIXES = ("fixed", "learnt")
RECOMPUTE_MODES = ("changed", "full")
MISSING_QUERY_LOG = ("latest", "empty", "fail", "wait")
EXTRACTORS = ("trafilatura_text", "trafilatura", "resiliparse", "visible")
# The reference ranker's analyzer: no stemmer, or a Snowball language (PyStemmer's algorithms); its stop words.
STEMMERS = ("none", "arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch", "english", "finnish",
            "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian", "lithuanian", "nepali",
            "norwegian", "porter", "portuguese", "romanian", "russian", "serbian", "spanish", "swedish", "tamil",
            "turkish", "yiddish")
STOP_LISTS = ("english", "none")
CHANGE_MODELS = ("poisson", "bursts")
GATE_REPORTS = ("problems", "always", "never")
PATH_SETTINGS = ("db_path", "data_dir", "seeds_file", "query_log_dir", "results_log_dir", "snapshot", "parse_cache",
                 "oracle_impact")
# The sections, in the order of the settings reference and of `write_toml`.
SECTIONS = ("storage", "orchestration", "scope", "fetch", "politeness", "parse", "ranking", "ordering", "refresh",
            "quality", "demo")
# Former names, read for one more release with a note naming the new one.
RENAMED = {"retry_limit": "url_attempts", "fetch_retries": "fetch_task_retries", "retry_delay": "task_retry_delay",
           "max_retry_delay": "fetch_task_max_retry_delay"}


# Why a setting is read live by every task instead of from its cycle's record (LIVE): it says where the crawl state is
# or what the machine running the task has, or it shapes the DAG, which the scheduler reads when it parses the file.
_MACHINE = "machine"
_DAG = "DAG"


class SettingsError(InputError):
    """A setting has a bad value; the message names it."""


def _in(section: str) -> Callable[..., Any]:
    """The field maker of one section. Constraints a value must meet: ``low`` <= value, ``above`` < value,
    value <= ``high``, value < ``below``, value in ``choices``; ``check(value)`` returns what is wrong, or None.
    ``live``: why every task reads the setting as it stands rather than from its cycle's record."""
    def setting(default: Any, help: str, **rules: Any) -> Any:
        return field(default=default, metadata={"section": section, "help": help, **rules})
    return setting


storage, orchestration, scope, fetch, politeness, parse, ranking, ordering, refresh, quality, demo = map(_in, SECTIONS)
_URL = UrlRules()


@dataclass(frozen=True)
class Settings:
    # Where the crawl state lives.
    db_path: str = storage("data/crawl.duckdb", "DuckDB file holding the whole crawl state", live=_MACHINE)
    data_dir: str = storage("data", "folder for shard files (WARC, Parquet) passed between tasks", live=_MACHINE)
    shard_storage: str = storage("", "where shard files live when workers share no folder: an fsspec URL such as "
                                 "s3://bucket/prefix or file:///shared/shards (empty = <data_dir>/cycles)",
                                 live=_MACHINE)
    parse_cache: str = storage("", "SQLite file of parse results keyed by the response and the parse settings and "
                               "code, so identical bytes are parsed once (the simulator sets it; empty = off)",
                               live=_MACHINE)
    duckdb_memory_limit: str = storage("2GB", "DuckDB memory_limit for every connection: beyond it a statement spills "
                                       "to <data_dir>/duckdb-tmp or its task stops, in one line naming this setting",
                                       check=memory_check, live=_MACHINE)
    duckdb_threads: int = storage(2, "DuckDB threads for every connection", low=1, live=_MACHINE)
    # How Airflow runs the cycles.
    schedule: str = orchestration("@daily", "Airflow schedule of crawl_cycle: a preset or a cron expression whose runs "
                                  "are at least a day apart (a cycle is one day's interval)", check=schedule_check,
                                  live=_DAG)
    start_date: str = orchestration("2026-11-01", "first data interval of crawl_cycle (YYYY-MM-DD)",
                                    check=date_check(optional=False), live=_DAG)
    end_date: str = orchestration("", "last data interval the scheduler runs by itself (YYYY-MM-DD; empty = no "
                                  "end); replays of a fixed set of query-log partitions set it to the last one",
                                  check=date_check(optional=True), live=_DAG)
    catchup: bool = orchestration(False, "the scheduler runs every interval from start_date that has no run yet, "
                                  "oldest first (Airflow's catchup); off: only the latest complete interval, then "
                                  "each as it ends", live=_DAG)
    shards: int = orchestration(4, "host shards per cycle; each is one mapped fetch/parse task", low=1)
    parse_workers: int = orchestration(0, "parser processes per parse task (0 = one per core)", low=0, live=_MACHINE)
    writer_queue: str = orchestration("crawl_writer", "Celery queue of every task that opens the DuckDB file (one "
                                      "worker, concurrency 1); fetch and parse shards use the default queue", live=_DAG)
    task_retries: int = orchestration(1, "Airflow retries of a failed task, fetch shards excepted "
                                      "(fetch_task_retries)", low=0, live=_DAG)
    task_retry_delay: float = orchestration(10.0, "seconds before a failed task's first Airflow retry", low=0,
                                            live=_DAG)
    fetch_task_retries: int = orchestration(3, "Airflow retries of a failed fetch shard task, each after twice the "
                                            "previous wait", low=0, live=_DAG)
    fetch_task_max_retry_delay: float = orchestration(600.0, "longest wait before a fetch shard task's retry "
                                                      "(exponential back-off cap)", low=0, live=_DAG)
    task_timeout: float = orchestration(3600.0, "seconds a task may run before Airflow fails it (execution_timeout)",
                                        live=_DAG)
    max_failed_runs: int = orchestration(3, "consecutive failed crawl_cycle runs after which Airflow pauses the DAG",
                                         low=1, live=_DAG)
    # What may enter the frontier: applied when URLs are admitted (seeds, links, redirects, sitemaps) and when
    # batches are chosen.
    seeds_file: str = scope("data/demo-web/seeds.txt", "seed URLs, one per line, admitted by `crawlcycle init`")
    allowed_domains: str = scope("", "comma-separated domains whose hosts may enter the frontier, each with its "
                                 "subdomains (empty = any)", check=domain_list_check)
    denied_domains: str = scope("", "comma-separated domains whose hosts never enter the frontier, each with its "
                                "subdomains", check=domain_list_check)
    url_include: str = scope("", "regular expression (RE2) a URL must hold a match of to enter the frontier "
                             "(empty = any URL)", check=regex_check)
    url_exclude: str = scope("", "regular expression (RE2): a URL holding a match never enters the frontier",
                             check=regex_check)
    max_hops: int = scope(0, "most links followed from the nearest seed (0 = no limit)", low=0)
    follow_external: bool = scope(True, "admit URLs of hosts other than the seeds' hosts")
    max_urls_per_host: int = scope(10000, "frontier URLs kept per host", low=1)
    # Requests and responses.
    user_agent: str = fetch("", "User-Agent header; must name the crawler and carry a contact URL (required by the "
                            "commands that fetch)")
    connect_timeout: float = fetch(5.0, "seconds to connect", low=0)
    read_timeout: float = fetch(10.0, "seconds between bytes", low=0)
    total_deadline: float = fetch(30.0, "seconds per response, whole body included", low=0)
    max_body_bytes: int = fetch(5_000_000, "response bodies are truncated (and marked) beyond this", low=1)
    max_redirects: int = fetch(5, "redirect hops followed", low=0)
    allow_networks: str = fetch("", "comma-separated CIDRs exempt from the SSRF guard (e.g. 127.0.0.0/8)",
                                check=networks_check)
    connect_to: str = fetch("", "comma-separated HOST=ADDR:PORT pairs (HOST may be *.suffix): connect there instead "
                            "of resolving HOST, like curl --connect-to (demo web on loopback)", check=routes_check)
    fetch_time_limit: float = fetch(600.0, "seconds a shard may fetch per cycle; URLs not reached are deferred")
    fetch_concurrency: int = fetch(32, "hosts fetched at once within a shard", low=1)
    url_attempts: int = fetch(3, "fetches of one URL that may fail transiently (timeouts, 5xx, ...), each in a later "
                              "cycle, before it is marked gone", low=1)
    sitemap_fallback: bool = fetch(True, "read /sitemap.xml of an origin whose freshly fetched robots.txt names no "
                                   "sitemap")
    sitemap_max_depth: int = fetch(2, "sitemap indexes followed this many levels below the sitemaps robots.txt names",
                                   low=0)
    sitemap_max_files: int = fetch(50, "sitemap files fetched per host per fetch", low=1)
    sitemap_max_bytes: int = fetch(10_000_000, "sitemap bytes read per file, after decompression", low=1)
    # Being a good guest: robots.txt, delays, and the back-off from origins and paths that do not answer.
    robots_token: str = politeness("crawlcycle", "user-agent token matched against robots.txt groups and robots meta "
                                   "tags")
    min_delay: float = politeness(1.0, "seconds between two requests to one host, at least", low=0)
    max_delay: float = politeness(30.0, "cap on the per-host delay; a host asking for more is deferred", low=0)
    delay_factor: float = politeness(2.0, "delay >= factor x last response time (adaptive politeness)", low=0)
    obey_crawl_delay: bool = politeness(True, "wait the Crawl-delay robots.txt asks for (the simulator replays a "
                                        "snapshot from loopback and sets this off)")
    robots_ttl: float = politeness(86400.0, "seconds a cached robots.txt stays valid", low=0)
    robots_max_bytes: int = politeness(512_000, "robots.txt bytes parsed, at most", low=1)
    host_error_limit: int = politeness(3, "consecutive errors after which a host's remaining URLs are deferred", low=1)
    origin_retry_cycles: int = politeness(1, "cycles an origin that did not answer (robots.txt unreachable or 5xx, "
                                          "DNS, refused or reset connections, TLS, host_error_limit failures in a row) "
                                          "waits for the probe of its robots.txt; each further failure doubles the "
                                          "wait", low=1)
    origin_park_after: int = politeness(5, "failures in a row after which an origin is parked: its URLs stay in the "
                                        "frontier and it is probed every origin_park_cycles cycles", low=1)
    origin_park_cycles: int = politeness(30, "cycles between two probes of a parked origin", low=1)
    origin_probes: int = politeness(100, "most origins whose robots.txt is fetched per cycle outside the batch (never "
                                    "contacted, or due after a back-off), by the priority of their best frontier URL",
                                    low=1)
    path_refusals: int = politeness(2, "4xx answers after which a path group (origin, first directory, extension) "
                                    "that never gave a page is held out of the batches, one of its URLs tried again "
                                    "when each back-off (1, 2, 4, ... cycles) ends", low=1)
    new_path_slots: int = politeness(4, "URLs of a path group that has not given a page yet (a new directory or file "
                                     "type) that a batch takes first; the rest of them go behind every other "
                                     "candidate", low=1)
    # What a response parses into: every setting here (and robots_token) is in the parse cache's fingerprint.
    max_url_length: int = parse(_URL.max_url_length, "longer URLs are rejected", low=1)
    sort_query_params: bool = parse(_URL.sort_query_params, "sort query parameters by name")
    drop_empty_query: bool = parse(_URL.drop_empty_query, "drop a bare '?' with no parameters")
    strip_session_params: bool = parse(_URL.strip_session_params, "strip session-id and tracking parameters "
                                       "(utm_*, sessionid, ...)")
    drop_index_pages: bool = parse(_URL.drop_index_pages, "drop default index pages (index.html, index.php, ...)")
    max_path_segments: int = parse(_URL.max_path_segments, "URLs with more path segments are rejected (spider trap)",
                                   low=1)
    max_segment_repeats: int = parse(_URL.max_segment_repeats, "URLs repeating one path segment this often are "
                                     "rejected (spider trap)", low=1)
    max_outlinks_per_page: int = parse(1000, "out-links kept per page", low=1)
    extractor: str = parse("trafilatura_text", "main-text extraction: trafilatura_text (trafilatura's main text, "
                           "comments left out; title and description by trafilatura's rules, the date only as the "
                           "page declares it in meta tags or JSON-LD), trafilatura (also trafilatura's whole "
                           "metadata pass: date, author, ...; half the speed) or resiliparse "
                           "(Resiliparse's main content: four times faster again, less precise) or visible (every "
                           "visible word of the body, boilerplate and all, as engines that index the whole page "
                           "read it)", choices=EXTRACTORS)
    # The query log and the reference ranker that says what users are shown.
    query_log_dir: str = ranking("data/demo-web/query_log", "query log partitions (dt=YYYY-MM-DD/*.tsv)")
    results_log_dir: str = ranking("", "your engine's result lists, partitions dt=YYYY-MM-DD/*.tsv of "
                                   "query<TAB>rank<TAB>url (or .parquet), read by `crawlcycle fit-ranker`; empty: none")
    missing_query_log: str = ranking("latest", "a cycle whose date has no query-log partition: 'latest' reads the "
                                     "latest earlier one, 'empty' runs without queries (hybrid then orders by "
                                     "prestige alone), 'fail' stops the cycle, 'wait' has Airflow wait up to "
                                     "query_log_wait seconds for it, then fails", choices=MISSING_QUERY_LOG)
    query_log_wait: float = ranking(21600.0, "seconds Airflow waits for a missing query-log partition "
                                    "(missing_query_log = wait)", low=0, live=_DAG)
    top_k: int = ranking(10, "K: results per query that count as shown", low=1)
    bm25_k1: float = ranking(1.2, "BM25F term-frequency saturation k1 of the reference ranker", above=0)
    bm25_weights: str = ranking("title=3,anchor=2,text=1,url=2", "BM25F weight per field: title, text, anchor, url",
                                check=field_numbers_check(RANK_FIELDS, float("inf")))
    bm25_b: str = ranking("title=0.5,anchor=0.5,text=0.75,url=0.5", "BM25F length normalisation b per field (0..1)",
                          check=field_numbers_check(RANK_FIELDS, 1))
    prestige_weight: float = ranking(0.5, "w of the PageRank prior: score = BM25F + w x ln(1 + pagerank x known URLs)",
                                     low=0)
    bm25_depth: int = ranking(200, "pages each query term nominates for exact scoring (more = closer to exhaustive)",
                              low=1)
    epoch_cycles: int = ranking(8, "cycles an index epoch holds the ranker's statistics (N, document frequencies, "
                                "average lengths, PageRank) still at most; within it a cycle scores only the pages it "
                                "indexed and carries the other results (recompute full: one cycle)", low=1)
    epoch_drift: float = ranking(0.02, "an index epoch closes, every query ranked again under today's statistics, once "
                                 "they would change more than this share of the sampled queries' top-K places",
                                 low=0, high=1)
    epoch_sample: int = ranking(200, "queries ranked under the epoch's and today's statistics each cycle to measure "
                                "its drift", low=1)
    ranker_stemmer: str = ranking("none", "the reference ranker's stemmer, for page and query terms alike: none or a "
                                  "Snowball language (english, german, ...); changing it re-indexes every page",
                                  choices=STEMMERS)
    ranker_stopwords: str = ranking("english", "stop words the reference ranker leaves out: english (Lucene's "
                                    "English list) or none; changing it re-indexes every page", choices=STOP_LISTS)
    ranker_field_words: int = ranking(0, "terms the reference ranker indexes of a page's title, text and URL and of "
                                      "each anchor text, from the start (an engine's field length cap); 0 indexes "
                                      "all; changing it re-indexes every page", low=0)
    # Which URLs the next batch takes.
    policy: str = ordering("hybrid", "ordering policy: " + ", ".join(POLICIES), check=policy_check)
    batch_size: int = ordering(400, "URLs fetched per cycle (c)", low=1)
    per_host_cap: int = ordering(40, "most URLs of one host in one batch", low=1)
    random_seed: int = ordering(7, "seed of the random policy and tie-breaks")
    perturb_seed: int = ordering(0, "seed of noise in the last digits: every exact sum's rounding grid moved by less "
                                 "than 1e-9, hybrid's priorities and the queries' neediness by 1e-9 of themselves, so "
                                 "that ties fall another way; the same crawl up to noise, to measure how much of its "
                                 "figure is luck (0: none)")
    needy_share: float = ordering(0.05, "share of the partition's queries kept as needy (top by neediness)")
    needy_max: int = ordering(1000, "most needy queries per cycle")
    needy_min: int = ordering(50, "fewest needy queries per cycle (when the partition has that many with candidates)",
                              low=0)
    improvability_prior: float = ordering(1.0, "improvability of every query until a fit exists")
    match_mode: str = ordering("evidence", "how needy queries find frontier pages: evidence (BM25 over URL tokens, "
                               "anchors, anchor context and linking pages' titles, plus out-links of the query's "
                               "results) or ngram (Pandey & Olston: the page holds match_share of the query's word "
                               "n-grams)", choices=MATCH_MODES)
    sketch_candidates: int = ordering(20, "match_mode evidence: frontier pages a needy query takes by BM25 over their "
                                      "evidence, and again by the score of the query's results linking to them", low=1)
    impact_odds: str = ordering("model", "what a needy query gives a frontier page it may answer: model (its "
                                "frequency x the odds the page enters its top K, by the top_k_odds model once fitted) "
                                "or sketch (Pandey & Olston: its whole frequency if the page is among its top K by "
                                "S', else nothing)", choices=IMPACT_ODDS)
    odds_bar: str = ordering("crawled", "the top K the top-K odds learn a page must enter: crawled (the crawl's own "
                             "results) or frontier (those results and the query's frontier candidates by S', as the "
                             "live top K will be once they are fetched)", choices=ODDS_BARS)
    semantic_match: bool = ordering(False, "match_mode evidence: add S' and the top-K odds a feature of meaning, the "
                                    "best cosine between the query's sentence embedding and those of the page's URL "
                                    "words and anchor texts (needs the optional model of "
                                    "requirements-semantic.lock)", check=embedding_model_check)
    evidence_weights: str = ordering("url=1,anchor=2,context=0.5,title=1", "BM25F weight per evidence field: url, "
                                     "anchor, context, title", check=field_numbers_check(EVIDENCE_FIELDS, float("inf")))
    evidence_b: str = ordering("url=0.5,anchor=0.5,context=0.75,title=0.75", "BM25F length normalisation b per "
                               "evidence field (0..1)", check=field_numbers_check(EVIDENCE_FIELDS, 1))
    ngram_max: int = ordering(3, "g: word n-grams of length 1..g match needy queries to frontier URLs and anchors",
                              low=1)
    match_share: float = ordering(1.0, "rho: a frontier page matches a query holding at least this share of its "
                                  "n-grams", above=0, high=1)
    recompute: str = ordering("changed", "what a refit computes again: changed (S' and the top-K odds are kept while "
                              "the share of the scores' spread S' no longer explains on this cycle's held-out queries "
                              "stays within refit_drift, for at most refit_max_age cycles) or full (every model from "
                              "all rows, every cycle)", choices=RECOMPUTE_MODES)
    refit_drift: float = ordering(0.05, "recompute changed: S' is trained again once its error on the held-out "
                                  "queries has grown by more than this share of the error of guessing their mean "
                                  "score (the share of the scores' spread it no longer explains)", low=0)
    refit_max_age: int = ordering(4, "recompute changed: cycles S' and the top-K odds are kept at most", low=1)
    s_prime_queries: int = ordering(600, "queries of the partition whose crawled matches train the S' model each "
                                    "cycle", low=1)
    hybrid_query_weight: float = ordering(0.9, "weight of the normalised query-based impact in the hybrid priority",
                                          low=0)
    hybrid_prestige_weight: float = ordering(0.1, "weight of the normalised prestige-based impact in the hybrid "
                                             "priority", low=0)
    hybrid_discovery_weight: float = ordering(0.0, "weight of the normalised discovery value (what fetching the page "
                                              "is expected to open, learned from what fetched pages revealed) in the "
                                              "hybrid priority (0: shown, not used; see the measurements in "
                                              "docs/findings.md)", low=0)
    hybrid_mix: str = ordering("fixed", "how hybrid mixes its parts: fixed (the three hybrid_*_weight settings) or "
                               "learnt (each refit learns the weights from the impact the fetched pages carry, shrunk "
                               "towards a prior that trusts link prestige while query evidence is thin; model_runs "
                               "hybrid_mix)", choices=HYBRID_MIXES)
    hybrid_normalization: str = ordering("max", "how both impacts are scaled to [0, 1] before mixing: max (divide by "
                                         "the largest over the eligible frontier) or rank (percent rank)",
                                         choices=NORMALIZATIONS)
    impact_signal: str = ordering("views", "impact the prestige regression learns when the partition has impressions: "
                                  "views (times shown in the top K) or clicks", choices=IMPACT_SIGNALS)
    rw_gamma: float = ordering(0.0, "gamma of policies rw/rw_eg: impact factor F = (I / max I) x (out-degree / "
                               "max)^gamma", low=0)
    rw_epsilon: float = ordering(0.001, "epsilon of policies rw/rw_eg: added to every page's observed impact I",
                                 above=0)
    rw_omega: float = ordering(0.8, "omega of policy rw_eg: share of a step along real links (the rest along "
                               "co-citations)", low=0, high=1)
    rw_damping: float = ordering(0.85, "alpha of policies rw/rw_eg: chance a step follows a link rather than "
                                 "restarting", above=0, below=1)
    # Which fetched pages the next batch fetches again (docs/explanation/refresh.md). A cycle is the unit of time:
    # Nutch's defaults in days are these in cycles of the default @daily schedule.
    refresh_policy: str = refresh("impact", "refresh policy: " + ", ".join(REFRESH_POLICIES), choices=REFRESH_POLICIES)
    min_revisit_cycles: int = refresh(1, "a fetched page is a refresh candidate once this many cycles have passed "
                                      "since its last fetch or check; adaptive's shortest interval", low=1)
    max_revisit_cycles: int = refresh(90, "a page not fetched or checked for this many cycles is refreshed before any "
                                      "other (Nutch's db.fetch.interval.max); adaptive's longest interval", low=1)
    refresh_share_min: float = refresh(0.0, "floor of the refresh share of a batch, while candidates last", low=0,
                                       high=1)
    refresh_share_max: float = refresh(1.0, "cap of the refresh share of a batch", low=0, high=1)
    refresh_fill_p_changed: float = refresh(0.5, "impact: a refresh less likely to have changed than this takes a "
                                            "slot only from a new URL it is worth more than, never one no new URL "
                                            "takes (0: refreshes fill every slot)", low=0, high=1)
    refresh_budget: float = refresh(0.3, "share of the batch the quota policies (uniform, proportional, "
                                    "user_centric) spend on refreshes", low=0, high=1)
    fixed_revisit_cycles: int = refresh(30, "interval of refresh policy fixed, and adaptive's first interval "
                                        "(Nutch's db.fetch.interval.default)", low=1)
    adaptive_inc_rate: float = refresh(0.4, "adaptive: the interval grows by this share after an unmodified check "
                                       "(Nutch's db.fetch.schedule.adaptive.inc_rate)", low=0)
    adaptive_dec_rate: float = refresh(0.2, "adaptive: the interval shrinks by this share after a modified check "
                                       "(Nutch's db.fetch.schedule.adaptive.dec_rate)", low=0, below=1)
    change_model: str = refresh("bursts", "how P(changed) of a stored page is estimated: poisson (a change rate per "
                                "page, path group and host) or bursts (the host's change events, a page's own rate "
                                "where its changes are its own)", choices=CHANGE_MODELS)
    change_rate_prior: float = refresh(0.1, "changes per cycle a page is expected to have while neither it, its path "
                                       "group nor its host has been checked", low=0)
    refresh_prior_weight: float = refresh(4.0, "checks' worth of the pooled estimate (path group, host, prior) in a "
                                          "page's change rate, and of moving_share_prior in the moving share",
                                          above=0)
    moving_share_prior: float = refresh(0.1, "share of a changed page's carried impact its re-fetch moves in or out "
                                        "of a top K, before any changed check has been judged", low=0, high=1)
    lastmod_trust_checks: int = refresh(10, "checks of a host's pages that must agree with its sitemap's lastmod "
                                        "dates before they decide P(changed) of its pages", low=1)
    lastmod_trust_share: float = refresh(0.9, "share of the checks judging a host's sitemap lastmod dates that must "
                                         "agree with them before they are trusted", above=0.5, high=1)
    # The data-quality gates between stages.
    gate_warn: str = quality("", "comma-separated gate checks whose failure is recorded and logged but does not stop "
                             "the cycle (names as in dq_results.expectation)")
    gate_max_error_share: float = quality(0.5, "fetch gate: most failed fetches (error class or status >= 400) in a "
                                          "batch", low=0, high=1)
    gate_max_empty_text_share: float = quality(0.5, "parse gate: most 2xx HTML pages without main text", low=0,
                                               high=1)
    gate_min_links_per_page: float = quality(1.0, "parse gate: fewest out-links per 2xx HTML page on average", low=0)
    gate_min_sample: int = quality(20, "distribution checks skip datasets with fewer rows than this", low=1)
    gate_reports: str = quality("problems", "when a gate writes its HTML report (GX data docs, linked from the Crawl "
                                "page): problems (a check failed or warned), always, never", choices=GATE_REPORTS)
    # The demo web on loopback.
    demo_hosts: int = demo(24, "hosts of the generated demo web", low=1)
    demo_pages: int = demo(2400, "pages of the generated demo web", low=1)
    demo_seed: int = demo(42, "seed of the demo web generator")
    demo_port: int = demo(8089, "port of the demo web server on loopback", low=1, high=65535)
    snapshot: str = demo("", "WARC file served by the demo web instead of the generated one")
    oracle_impact: str = demo("", "Parquet file of each snapshot page's true impact (url, impact), written by the "
                              "simulator for its reference ordering oracle; empty for a crawl")
    # Not a setting: where each value not at its default came from ("file <path>", "environment CRAWLCYCLE_<NAME>",
    # "flag --<name>", "run parameter <name>"), kept by load_settings, with_overrides and from_record.
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def url_rules(self) -> UrlRules:
        """The canonical form's rules this crawl uses."""
        return UrlRules(**{f.name: getattr(self, f.name) for f in fields(UrlRules)})

    def path(self, name: str) -> Path:
        return Path(getattr(self, name))

    def section(self, name: str) -> dict[str, Any]:
        """The values of one section, by setting name."""
        return {f.name: getattr(self, f.name) for f in SECTION_FIELDS[name]}

    def record(self) -> dict[str, Any]:
        """Every setting's value and the sources of those not at their defaults: what a cycle runs with, as begin
        stores it (``cycles.settings``) and plan_shards writes it into each shard folder."""
        return {"values": {n: getattr(self, n) for n in SETTING_NAMES}, "sources": dict(self.sources)}

    def validate(self) -> Settings:
        """These settings, if every value is valid; else SettingsError naming the setting, the reason and where the
        value came from."""
        for f in SETTING_FIELDS:
            if wrong := problem(f, getattr(self, f.name)):
                raise SettingsError(f"setting {f.name}: {wrong}{self._given(f.name)}")
        for name, ok, why in (
                ("task_timeout", self.task_timeout > self.fetch_time_limit,
                 f"must exceed fetch_time_limit ({self.fetch_time_limit}), got {self.task_timeout}"),
                ("max_delay", self.max_delay >= self.min_delay,
                 f"must be >= min_delay ({self.min_delay}), got {self.max_delay}"),
                ("hybrid_query_weight", self.hybrid_query_weight + self.hybrid_prestige_weight > 0,
                 "hybrid_query_weight + hybrid_prestige_weight must be positive"),
                ("max_revisit_cycles", self.max_revisit_cycles >= self.min_revisit_cycles,
                 f"must be >= min_revisit_cycles ({self.min_revisit_cycles}), got {self.max_revisit_cycles}"),
                ("fixed_revisit_cycles",
                 self.min_revisit_cycles <= self.fixed_revisit_cycles <= self.max_revisit_cycles,
                 f"must lie in [min_revisit_cycles, max_revisit_cycles] ([{self.min_revisit_cycles}, "
                 f"{self.max_revisit_cycles}]), got {self.fixed_revisit_cycles}"),
                ("policy", self.policy not in REFERENCE_NAMES or bool(self.oracle_impact),
                 f"{self.policy} is the simulator's reference ordering: it orders by the true impact only the "
                 "simulator knows (oracle_impact), and cannot run a crawl"),
                ("refresh_share_max", self.refresh_share_max >= self.refresh_share_min,
                 f"must be >= refresh_share_min ({self.refresh_share_min}), got {self.refresh_share_max}")):
            if not ok:
                raise SettingsError(f"setting {name}: {why}{self._given(name)}")
        return self

    def _given(self, name: str) -> str:
        return f" (from {self.sources[name]})" if name in self.sources else ""

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
        return field_numbers(getattr(self, name), EVIDENCE_FIELDS if name.startswith("evidence") else RANK_FIELDS)

    def domains(self, name: str) -> list[str]:
        """The domains of setting ``name`` (allowed_domains, denied_domains)."""
        return domain_list(getattr(self, name))

    def scope_rules(self) -> dict[str, Any]:
        """The crawl scope as the ``rules`` struct of the SQL macro ``scope_reason``."""
        return {"allowed_domains": self.domains("allowed_domains"), "denied_domains": self.domains("denied_domains"),
                "url_include": self.url_include, "url_exclude": self.url_exclude, "max_hops": self.max_hops,
                "follow_external": self.follow_external}

    def allow_networks_list(self) -> list[str]:
        return items(self.allow_networks)

    def connect_to_map(self) -> dict[str, tuple[str, int]]:
        """HOST (or '*.suffix') -> (address, port) from the connect_to setting."""
        return connect_routes(self.connect_to)

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


SETTING_FIELDS = tuple(f for f in fields(Settings) if "section" in f.metadata)
SETTING_NAMES = tuple(f.name for f in SETTING_FIELDS)
SECTION_FIELDS: dict[str, tuple[Field, ...]] = {
    s: tuple(f for f in SETTING_FIELDS if f.metadata["section"] == s) for s in SECTIONS}
SECTION_OF = {f.name: f.metadata["section"] for f in SETTING_FIELDS}
# The settings every task reads as they stand, and why; a cycle's other settings are those its begin recorded.
LIVE = {f.name: f.metadata["live"] for f in SETTING_FIELDS if "live" in f.metadata}
def describe() -> list[tuple[str, str, Any, str]]:
    """(section, name, default, help) of every setting, by section: for the settings reference
    (docs/reference/settings.md) and `--help`."""
    return [(s, f.name, f.default, f.metadata["help"]) for s, fs in SECTION_FIELDS.items() for f in fs]
