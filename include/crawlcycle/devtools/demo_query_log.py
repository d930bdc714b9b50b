"""The synthetic query log of the demo web.

``query_log/dt=YYYY-MM-DD/queries.tsv`` holds ``query<TAB>frequency`` lines, no header, most
frequent first. Queries are topic words and phrases cut from page titles (head: popular pages,
tail: tail-host pages), plus some off-topic background queries. Frequencies are invented with a
Zipf law, f(rank) = round(2000 / rank), floored at 1; from day to day ranks jitter, a few
queries drop out and a few new ones come in.
"""

from __future__ import annotations

import math
import random

from crawlcycle.devtools.demo_link_graph import _Host, _Page

BACKGROUND_QUERIES = [
    "weather tomorrow", "cheap flights", "lottery results", "news today", "movie times",
    "football scores", "online banking login", "pizza near me", "translate english to french",
    "how old is the universe", "currency converter", "train timetable", "tax return deadline",
    "best smartphone", "recipe for pancakes", "song lyrics", "used cars", "job vacancies",
]
FIRST_QUERY_FREQUENCY = 2000


def _query_pool(rng: random.Random, hosts: list[_Host], pages: list[_Page]) -> tuple[list[str], list[str]]:
    """(queries in rank order, reserve of queries that appear on some days only)."""
    indegree: dict[int, int] = {}
    for h in hosts:
        for pid in h.urn:
            indegree[pid] = indegree.get(pid, 0) + 1

    def phrase(page: _Page) -> str:
        """What someone looking for ``page`` types: one of its topic words, both, or its title."""
        r = rng.random()
        if r < 0.6 or len(page.terms) == 1 and r < 0.8:
            return page.terms[0]
        return " ".join(page.terms) if r < 0.8 else page.title.lower()

    regular_pages = sorted((p for p in pages if not p.host.tail and p.born >= 0),
                           key=lambda p: (-indegree[p.id], p.id))
    head = [h.topic for h in hosts if not h.tail]
    head += [w for h in hosts if not h.tail for w in h.words[:2]]
    head += [phrase(p) for p in regular_pages[:60]]
    middle = [phrase(p) for p in rng.sample(regular_pages, min(len(regular_pages), len(pages) // 5))]
    middle += rng.sample(BACKGROUND_QUERIES, len(BACKGROUND_QUERIES) // 2)
    tail_pages = [p for p in pages if p.host.tail and p.born >= 0]
    tail = [phrase(p) for p in rng.sample(tail_pages, len(tail_pages) // 2)]
    tail += [f"{h.topic} {w}" for h in hosts if h.tail for w in rng.sample(h.words, 2)]
    rng.shuffle(head)
    rng.shuffle(middle)
    lower = middle[len(middle) // 2:] + tail  # tail queries are rare: they share the lower ranks
    rng.shuffle(lower)
    ranked = list(dict.fromkeys(head + middle[: len(middle) // 2] + lower))
    reserve = [q for q in dict.fromkeys([phrase(p) for p in rng.sample(regular_pages, 40)]
                                         + BACKGROUND_QUERIES) if q not in ranked]
    return ranked, reserve


def _query_day(ranked: list[str], reserve: list[str], seed: int, day: int) -> str:
    rng = random.Random(f"{seed}/queries/{day}")
    today = [q for q in ranked if rng.random() > 0.03] + rng.sample(reserve, min(len(reserve), 3 + day % 4))
    # Each query keeps roughly its place: its rank is scaled by a log-normal jitter; newcomers land
    # somewhere in the lower two thirds.
    base = {q: i + 1 for i, q in enumerate(ranked)}
    key = {q: base.get(q, len(ranked) * rng.uniform(0.3, 1.0)) * math.exp(rng.gauss(0, 0.25)) for q in today}
    keyed = sorted(today, key=lambda q: (key[q], q))
    return "".join(f"{q}\t{max(1, round(FIRST_QUERY_FREQUENCY / r))}\n" for r, q in enumerate(keyed, 1))
