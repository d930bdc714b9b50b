"""The expectation suites of the quality gates, as code.

Each gate (fetch, parse, update, materialize) validates datasets, each selected by a SQL file
``sql/quality/gates/<gate>/<dataset>.sql`` from the stage's output (shard Parquet files staged as ``g_*`` views, or
the DuckDB tables), with Great Expectations expectations. A check is one expectation on one dataset, under a
name that the task's error, ``dq_results`` and ``gate_warn`` use. Distribution checks (``sample``) judge a
share or a mean, so they are skipped on datasets smaller than ``gate_min_sample`` rows, where one odd page
would swing them.

This module only describes the suites; ``crawlcycle.quality.gates`` runs them (and pays the import of GX).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crawlcycle.contracts.url_states import TO_FETCH, FetchOutcome
from crawlcycle.settings import Settings

STAGES = ("fetch", "parse", "update", "materialize")
MEDIA_TYPE = r"^[a-z0-9][a-z0-9.+_-]*/[a-z0-9][a-z0-9.+_-]*$"  # bare and lower case: no parameters


@dataclass(frozen=True)
class Check:
    name: str
    dataset: str
    expectation: str  # class name in great_expectations.expectations
    kwargs: dict[str, Any] = field(default_factory=dict)
    sample: bool = False  # a distribution check, skipped on small datasets
    meaning: str = ""


def suites(settings: Settings) -> dict[str, list[Check]]:
    """Every check of every gate, with the thresholds of ``settings``."""
    def c(name: str, dataset: str, expectation: str, meaning: str, sample: bool = False, **kwargs: Any) -> Check:
        return Check(name, dataset, expectation, kwargs, sample, meaning)

    return {
        "fetch": [
            c("fetch_log_url_not_null", "fetch_log", "ExpectColumnValuesToNotBeNull", "every row names its URL",
              column="url"),
            c("fetch_log_key_unique", "fetch_log", "ExpectColumnValuesToBeUnique", "one row per batch URL",
              column="url"),
            c("status_known", "fetch_log", "ExpectColumnValuesToBeBetween", "HTTP status in 100..599",
              column="status", min_value=100, max_value=599),
            c("outcome_known", "fetch_log", "ExpectColumnValuesToBeInSet", "outcome is a fetch outcome",
              column="outcome", value_set=list(FetchOutcome)),
            c("failure_explained", "fetch_log", "ExpectColumnValuesToBeInSet",
              "a row without a status carries an error class", column="explained", value_set=[True]),
            c("content_type_known", "fetch_log", "ExpectColumnValuesToMatchRegex",
              "content type is a bare lower-case media type", column="content_type", regex=MEDIA_TYPE),
            c("error_share", "fetch_log", "ExpectColumnMeanToBeBetween",
              "share of failed fetches (error class or status >= 400) at most gate_max_error_share", sample=True,
              column="failed", max_value=settings.gate_max_error_share),
            c("every_batch_url_logged", "batch_log", "ExpectColumnValuesToNotBeNull",
              "every URL of the batch has a fetch-log row", column="logged_url"),
            c("fetch_log_within_batch", "batch_log", "ExpectColumnValuesToNotBeNull",
              "no fetch-log row outside the batch", column="batch_url"),
            c("host_gap_respected", "request_gaps", "ExpectColumnPairValuesAToBeGreaterThanB",
              "between two requests to a host, at least its delay", column_A="gap", column_B="required",
              or_equal=True),
        ],
        "parse": [
            c("pages_url_not_null", "pages", "ExpectColumnValuesToNotBeNull", "every parsed page names its URL",
              column="url"),
            c("pages_key_unique", "pages", "ExpectColumnValuesToBeUnique", "one parse row per page", column="url"),
            c("empty_text_share", "html_pages", "ExpectColumnMeanToBeBetween",
              "share of 2xx HTML pages without main text at most gate_max_empty_text_share", sample=True,
              column="empty_text", max_value=settings.gate_max_empty_text_share),
            c("links_per_page", "html_pages", "ExpectColumnMeanToBeBetween",
              "2xx HTML pages hold gate_min_links_per_page out-links on average, at least", sample=True,
              column="n_links", min_value=settings.gate_min_links_per_page),
            c("links_src_not_null", "links", "ExpectColumnValuesToNotBeNull", "links have a source", column="src"),
            c("links_dst_not_null", "links", "ExpectColumnValuesToNotBeNull", "links have a destination",
              column="dst"),
            c("links_anchor_not_null", "links", "ExpectColumnValuesToNotBeNull",
              "links have an anchor text (maybe empty)", column="anchor"),
            c("links_canonical", "links", "ExpectColumnPairValuesToBeEqual",
              "link destinations canonicalize to themselves", column_A="dst", column_B="dst_canonical"),
        ],
        "update": [
            c("fetch_log_complete", "batch_log", "ExpectColumnValuesToNotBeNull",
              "every batch URL of the cycle was logged", column="logged_url"),
            c("frontier_crawled_disjoint", "crawled_status", "ExpectColumnValuesToNotBeInSet",
              "a crawled page is never still to fetch", column="status", value_set=list(TO_FETCH)),
            c("links_source_known", "cycle_links", "ExpectColumnValuesToBeInSet",
              "links of the cycle come from a fetched page or a redirected URL", column="src_known",
              value_set=[True]),
            c("links_destination_known", "cycle_links", "ExpectColumnValuesToBeInSet",
              "links of the cycle point at a known URL", column="dst_known", value_set=[True]),
            c("frontier_urls_canonical", "new_urls", "ExpectColumnPairValuesToBeEqual",
              "URLs new to the frontier canonicalize to themselves", column_A="url", column_B="url_canonical"),
        ],
        "materialize": [
            c("batch_size_respected", "next_batch", "ExpectTableRowCountToBeBetween",
              "the next batch holds at most batch_size URLs", max_value=settings.batch_size),
            c("batch_not_crawled", "next_batch", "ExpectColumnValuesToBeInSet",
              "nothing crawled is fetched again but as a refresh, and a refresh is a stored page",
              column="crawled_as_kind", value_set=[True]),
            c("batch_robots_allowed", "next_batch", "ExpectColumnValuesToBeInSet",
              "no URL its origin's stored robots.txt disallows", column="robots_allowed", value_set=[True]),
            c("batch_origins_answered", "next_batch", "ExpectColumnValuesToBeInSet",
              "every URL's origin answered its latest try (or is a seed's, not tried yet)", column="origin_answered",
              value_set=[True]),
            c("batch_open", "next_batch", "ExpectColumnValuesToBeInSet",
              "every new URL is still to fetch, every refresh a fetched page", column="state_as_kind",
              value_set=[True]),
            c("per_host_cap_respected", "batch_hosts", "ExpectColumnValuesToBeBetween",
              "at most per_host_cap URLs of one host", column="urls", max_value=settings.per_host_cap),
        ],
    }


def check_names() -> list[str]:
    """Every check's name (names do not depend on settings), for validating ``gate_warn``."""
    return [c.name for checks in suites(Settings()).values() for c in checks]
