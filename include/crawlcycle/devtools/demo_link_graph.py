"""The link graph of the demo web, and how it changes by date: hosts, pages, the links between them, each page's
change rate, and the days pages are added and removed.

The web
  Each host ``<topic>.demo.test`` is about one topic; page titles and anchor texts come from that topic's vocabulary
  (``crawlcycle.devtools.demo_vocabulary``), and URLs are ``http://<host>/<section>/<slug-of-title>.html``, so query
  words occur in URL tokens and anchors. Every page hangs from its host's home page ``/`` through a
  tree of links from older to newer pages (so a crawl from the home page reaches it), and cites
  older pages chosen by preferential attachment (chance proportional to in-links + 1; a few of them
  on other hosts, mostly of the same topic family), which makes in-links follow a power law.
  A few "tail" hosts on niche topics get a single link from the rest of the web and no citations.

The web changes by date
  Each page changes as a Poisson process with a rate drawn once per page (``CHANGE_RATES``): most pages rarely
  (60 %: once in 60 days on average), some weekly (30 %: 1/7 per day), a few often (10 %: once a day); home pages
  once a day. Pages are added and removed: besides the ``pages`` of the first day, ``ADDED_SHARE`` × ``pages`` newer
  pages are published one by one, each on a day drawn uniformly from days 1..``CHANGE_HORIZON`` (never before its
  tree parent), and until then no page links to them; ``REMOVED_SHARE`` of the older leaf pages are removed on a day
  drawn likewise, after which they answer 404 while the links to them stay.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

from crawlcycle.devtools.demo_vocabulary import HOST_QUALIFIERS, SECTIONS, TAIL_TOPICS, TITLE_PATTERNS, TOPICS

# (share of pages, changes per day): most pages change rarely, some weekly, a few every day or so.
CHANGE_RATES = ((0.6, 1 / 60), (0.3, 1 / 7), (0.1, 1.0))
HOME_RATE = 1.0  # a home page lists what is new
ADDED_SHARE = 0.06  # pages published over the first CHANGE_HORIZON days, as a share of the first day's
REMOVED_SHARE = 0.03  # older leaf pages, removed over the first CHANGE_HORIZON days
CHANGE_HORIZON = 14


@dataclass
class _Host:
    name: str
    topic: str
    family: str
    words: list[str]
    tail: bool
    pages: list[_Page] = field(default_factory=list)
    urn: list[int] = field(default_factory=list)  # page ids, one entry per in-link + 1

    @property
    def home(self) -> str:
        return f"http://{self.name}/"


@dataclass
class _Page:
    id: int
    host: _Host
    url: str
    title: str
    born: int  # creation order over the whole web: links go from newer to older pages
    terms: tuple[str, ...] = ()  # the topic words in the title
    # (href as written, anchor text, the demo page it links to: shown once that page is published)
    links: list[tuple[str, str, _Page | None]] = field(default_factory=list)
    extra_html: list[str] = field(default_factory=list)
    parent: _Page | None = None  # the page whose tree link leads here
    rate: float = 0.0  # changes per day
    appears: int = 0  # first day it exists
    removed: int | None = None  # first day it no longer exists

    @property
    def stable(self) -> bool:
        """There every day: what other hosts' entry links and the awkward cases may hang from."""
        return self.appears == 0 and self.removed is None

    def alive(self, day: int) -> bool:
        return self.appears <= day and (self.removed is None or day < self.removed)

    def changes(self, seed: int, day: int) -> int:
        """How often its text changed from day 0 to ``day``: each day with chance 1 - exp(-rate)."""
        chance = 1 - math.exp(-self.rate)
        return sum(random.Random(f"{seed}/change/{self.url}/{d}").random() < chance for d in range(1, day + 1))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _title(rng: random.Random, words: list[str]) -> tuple[str, tuple[str, str]]:
    a, b = rng.sample(words, 2)
    pattern = rng.choice(TITLE_PATTERNS)
    return pattern.format(a=a, b=b).capitalize(), (a, b) if "{b}" in pattern else (a,)


def _href(page: _Page, target_url: str, rng: random.Random) -> str:
    """How ``page`` writes a link to ``target_url``: absolute across hosts, a mix within one."""
    base = f"http://{page.host.name}"
    if not target_url.startswith(base + "/") or rng.random() < 0.2:
        return target_url
    path = target_url[len(base):]
    own_dir = page.url[len(base):].rsplit("/", 1)[0]
    if path.rsplit("/", 1)[0] == own_dir and own_dir and rng.random() < 0.6:
        return path.rsplit("/", 1)[1]
    if own_dir and rng.random() < 0.5:
        return "../" + path.lstrip("/")
    return path


def _hosts(n_hosts: int, n_tail: int) -> list[_Host]:
    regular = []
    for i in range(n_hosts - n_tail):
        topic, family, words = TOPICS[i % len(TOPICS)]
        rnd = i // len(TOPICS)
        name = topic if rnd == 0 else f"{topic}-{HOST_QUALIFIERS[rnd - 1]}"
        regular.append(_Host(f"{name}.demo.test", topic, family, words, False))
    tail = [_Host(f"{t}.demo.test", t, f, w, True) for t, f, w in TAIL_TOPICS[:n_tail]]
    return regular + tail


def _page_counts(hosts: list[_Host], pages: int) -> list[int]:
    tail_size = max(5, pages // 100)
    regular = [h for h in hosts if not h.tail]
    weights = [1 / (i + 1) ** 0.6 for i in range(len(regular))]
    left = pages - tail_size * (len(hosts) - len(regular))
    spare = left - 8 * len(regular)  # at least 8 pages each, the rest by a Zipf-like weight
    counts = [8 + int(spare * w / sum(weights)) for w in weights]
    counts[0] += left - sum(counts)
    return counts + [tail_size] * (len(hosts) - len(regular))


def _build_graph(rng: random.Random, hosts: list[_Host], counts: list[int],
                 drafts_host: _Host) -> list[_Page]:
    pages: list[_Page] = []
    parents: dict[str, list[_Page]] = {}  # pages that may carry a host's tree links (none disallowed)
    for h in hosts:
        home = _Page(len(pages), h, h.home, f"{h.topic.capitalize()} home", -1)
        pages.append(home)
        h.pages.append(home)
        h.urn.append(home.id)
        parents[h.name] = [home]
    families: dict[str, list[_Host]] = {}
    for h in hosts:
        if not h.tail:
            families.setdefault(h.family, []).append(h)
    regular = [h for h in hosts if not h.tail]
    # Creation order interleaves hosts at random, so citations can reach older pages anywhere.
    order = [h for h, c in zip(hosts, counts, strict=True) for _ in range(c - 1)]
    rng.shuffle(order)
    slugs: dict[str, set[str]] = {h.name: set() for h in hosts}
    for born, h in enumerate(order):
        title, terms = _title(rng, h.words)
        tries = 1
        while _slug(title) in slugs[h.name]:
            title, terms = _title(rng, h.words)
            tries += 1
            if tries > 20:  # a large host runs out of word pairs: number the repeats
                title = f"{title} {tries}"
        slugs[h.name].add(_slug(title))
        section = "drafts" if h is drafts_host and rng.random() < 0.1 else rng.choice(SECTIONS)
        page = _Page(len(pages), h, f"http://{h.name}/{section}/{_slug(title)}.html", title, born, terms)
        parent = page.parent = rng.choice(parents[h.name])
        parent.links.append((_href(parent, page.url, rng), page.title, page))
        if not h.tail:  # tail pages cite nothing, so they stay rarely linked
            cited = set()
            for _ in range(2 + min(12, int(rng.expovariate(1 / 4)))):
                if rng.random() < 0.85:
                    target_host = h
                else:
                    target_host = rng.choice(families[h.family] if rng.random() < 0.6 else regular)
                target = pages[rng.choice(target_host.urn)]
                if target.id not in cited:
                    cited.add(target.id)
                    page.links.append((_href(page, target.url, rng), target.title, target))
                    target_host.urn.append(target.id)
        pages.append(page)
        h.pages.append(page)
        h.urn.append(page.id)
        if section != "drafts":
            parents[h.name].append(page)
    return pages


def _plan_changes(rng: random.Random, pages: list[_Page], added: int) -> None:
    """Each page's change rate, and the pages added (the ``added`` newest) and removed over the first
    ``CHANGE_HORIZON`` days."""
    shares, rates = zip(*CHANGE_RATES, strict=True)
    for p in pages:
        p.rate = HOME_RATE if p.born < 0 else rng.choices(rates, shares)[0]
    regular = [p for p in pages if p.born >= 0 and not p.host.tail]
    newest = sorted(regular, key=lambda p: p.born)[len(regular) - added:]
    for p in newest:  # in creation order: a parent's day is known before its children's
        p.appears = max(rng.randint(1, CHANGE_HORIZON), p.parent.appears if p.parent else 0)
    parents = {p.parent.id for p in pages if p.parent}
    leaves = [p for p in regular if p.appears == 0 and p.id not in parents]
    for p in rng.sample(leaves, round(REMOVED_SHARE * len(regular))):
        p.removed = rng.randint(1, CHANGE_HORIZON)


def _add_entry_links(rng: random.Random, hosts: list[_Host], n_seeds: int) -> None:
    """Every host after the seed hosts gets a link to its home page from a host before it."""
    regular = [h for h in hosts if not h.tail]
    for i, h in enumerate(hosts[n_seeds:], start=n_seeds):
        source = rng.choice([p for p in rng.choice(regular[:i]).pages[1:] if "/drafts/" not in p.url and p.stable])
        source.links.append((h.home, f"{h.topic} {rng.choice(['resources', 'notes', 'guide'])}", None))
