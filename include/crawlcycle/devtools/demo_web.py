"""A generated demo web: topical hosts, real HTML, skewed links, a synthetic query log, and a web that changes by
date.

Everything is a pure function of the seed: the same arguments give byte-identical files, and the web of a date is the
same whatever number of days is written.

The web
  Each host ``<topic>.demo.test`` is about one topic; page titles, text and anchor texts come from
  that topic's vocabulary, and URLs are ``http://<host>/<section>/<slug-of-title>.html``, so query
  words occur in URL tokens and anchors. Every page hangs from its host's home page ``/`` through a
  tree of links from older to newer pages (so a crawl from the home page reaches it), and cites
  older pages chosen by preferential attachment (chance proportional to in-links + 1; a few of them
  on other hosts, mostly of the same topic family), which makes in-links follow a power law.
  A few "tail" hosts on niche topics get a single link from the rest of the web and no citations.

  Awkward cases: 301/302 redirects (one chain of two hops, one to another host), links to missing
  pages (404), a slow host (``behaviour.json``), a host whose robots.txt disallows ``/drafts/`` and
  asks for ``Crawl-delay: 0.2``, a host with no robots.txt (404), a tail host whose robots.txt names a
  sitemap listing all its pages, a page linked with a percent-encoded ``~`` (``/%7Eeditor/``), and
  non-HTML files (PDF, plain text, PNG).

The web changes by date
  One WARC per day of the query log (``web.warc.gz`` the first day, ``web-<date>.warc.gz`` the others), each the
  whole web of that day, served as a dated series (``crawlcycle.devtools.warc_server.Series``, at-start switching).
  Each page changes as a Poisson process with a rate drawn once per page (``CHANGE_RATES``): most pages rarely
  (60 %: once in 60 days on average), some weekly (30 %: 1/7 per day), a few often (10 %: once a day); home pages
  once a day. On a day when a page changes, its text is written anew (same title and links; the text of a page is
  a function of the seed, the URL and the number of changes so far). Pages are added and removed: besides the
  ``pages`` of the first day, ``ADDED_SHARE`` × ``pages`` newer pages are published one by one, each on a day drawn
  uniformly from days 1..``CHANGE_HORIZON`` (never before its tree parent), and until then no page links to them;
  ``REMOVED_SHARE`` of the older leaf pages are removed on a day drawn likewise, after which they answer 404 while
  the links to them stay. A host's ``/latest.html`` redirects to its newest page of the day. Day 0 is
  ``start_date``; a record's ``WARC-Date`` is the midnight before its day.

  Every response carries nginx's validators: ``Last-Modified``, the midnight before the first day of the run of days
  its bytes have been the same, and ``ETag`` ``"<that time, hex>-<length, hex>"``. In ``behaviour.json``, besides
  the slow host, one host ignores conditional requests (``conditional: false``), one sends one ``Last-Modified``
  for every file and no ETag (``validators: fixed-date``) and one sends no validators (``validators: none``); the
  server answers conditional requests for the others.

The query log (synthetic)
  ``query_log/dt=YYYY-MM-DD/queries.tsv`` holds ``query<TAB>frequency`` lines, no header, most
  frequent first. Queries are topic words and phrases cut from page titles (head: popular pages,
  tail: tail-host pages), plus some off-topic background queries. Frequencies are invented with a
  Zipf law, f(rank) = round(2000 / rank), floored at 1; from day to day ranks jitter, a few
  queries drop out and a few new ones come in.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import random
import re
import struct
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from html import escape
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# (topic, family, vocabulary): the first 36 are ordinary hosts, in the order hosts are made.
TOPICS: list[tuple[str, str, list[str]]] = [
    ("astronomy", "science", ["telescope", "galaxy", "nebula", "comet", "eclipse", "planet", "orbit",
                              "eyepiece", "meteor", "supernova", "constellation", "moon", "star chart",
                              "light pollution", "observatory", "asteroid"]),
    ("hiking", "outdoors", ["trail", "backpack", "boots", "summit", "map reading", "compass", "blister",
                            "water filter", "tent", "switchback", "ridge", "trekking poles", "rain jacket",
                            "day hike", "campsite", "navigation"]),
    ("baking", "food", ["sourdough", "yeast", "flour", "oven", "croissant", "pastry", "proofing", "bread",
                        "butter", "crust", "dough", "baguette", "rye", "starter", "cake", "kneading"]),
    ("gardening", "home", ["compost", "tomato", "seedling", "pruning", "mulch", "raised bed", "soil",
                           "perennial", "watering", "greenhouse", "weeds", "roses", "herbs", "pest control",
                           "bulbs", "fertilizer"]),
    ("photography", "arts", ["aperture", "shutter speed", "lens", "tripod", "exposure", "portrait",
                             "landscape", "histogram", "white balance", "sensor", "flash", "composition",
                             "focal length", "raw files", "depth of field", "street photography"]),
    ("linux", "tech", ["kernel", "shell", "systemd", "package manager", "filesystem", "permissions",
                       "cron", "ssh", "bash script", "grep", "process", "boot loader", "mount", "sudo",
                       "terminal", "logs"]),
    ("geology", "science", ["granite", "basalt", "fossil", "volcano", "earthquake", "sediment", "mineral",
                            "quartz", "plate tectonics", "erosion", "limestone", "glacier", "crystal",
                            "rock cycle", "fault line", "magma"]),
    ("cycling", "outdoors", ["road bike", "gear shifting", "chain", "saddle", "puncture", "helmet",
                             "cadence", "climbing", "tire pressure", "brakes", "commuting", "touring",
                             "derailleur", "wheel truing", "bike fit", "group ride"]),
    ("coffee", "food", ["espresso", "grinder", "roast", "arabica", "pour over", "crema", "milk frothing",
                        "french press", "beans", "extraction", "latte", "burr", "aeropress", "cold brew",
                        "tamping", "water temperature"]),
    ("woodworking", "home", ["chisel", "dovetail", "table saw", "joinery", "sanding", "oak", "hand plane",
                             "workbench", "wood glue", "finish", "mortise", "lathe", "walnut", "clamps",
                             "router", "grain"]),
    ("pottery", "arts", ["clay", "kiln", "glaze", "wheel throwing", "stoneware", "porcelain", "trimming",
                         "firing", "slip", "bisque", "centering", "handbuilding", "raku", "mug", "bowl",
                         "underglaze"]),
    ("databases", "tech", ["sql", "index", "query planner", "transaction", "join", "schema", "backup",
                           "replication", "primary key", "normalization", "vacuum", "deadlock",
                           "foreign key", "isolation level", "sharding", "migration"]),
    ("botany", "science", ["photosynthesis", "chlorophyll", "pollination", "leaf", "root", "fern",
                           "moss", "seed", "flower", "stem", "germination", "orchid", "conifer", "cactus",
                           "wildflower", "tree"]),
    ("sailing", "outdoors", ["mainsail", "jib", "knots", "tacking", "anchor", "tide", "keel", "rudder",
                             "wind", "mooring", "dinghy", "chart plotter", "life jacket", "harbor",
                             "spinnaker", "reefing"]),
    ("cheese", "food", ["cheddar", "brie", "rennet", "curd", "whey", "aging", "goat cheese", "mozzarella",
                        "rind", "blue cheese", "parmesan", "cheese cave", "culture", "gouda", "feta",
                        "pasteurization"]),
    ("beekeeping", "home", ["hive", "queen bee", "honey", "swarm", "smoker", "frames", "varroa mite",
                            "pollen", "beeswax", "nectar", "brood", "drone", "colony", "extractor",
                            "bee suit", "winter feeding"]),
    ("calligraphy", "arts", ["nib", "ink", "brush pen", "copperplate", "italic", "serif", "paper",
                             "stroke", "letterform", "gothic script", "flourish", "spacing",
                             "pointed pen", "guidelines", "lettering", "gouache"]),
    ("networking", "tech", ["router", "tcp", "dns", "subnet", "firewall", "latency", "packet", "vlan",
                            "ip address", "bandwidth", "load balancer", "switch", "dhcp", "vpn", "http",
                            "ping"]),
    ("meteorology", "science", ["cloud", "rainfall", "humidity", "front", "barometer", "thunderstorm",
                                "forecast", "jet stream", "hurricane", "fog", "wind chill", "radar",
                                "snowfall", "dew point", "pressure system", "tornado"]),
    ("climbing", "outdoors", ["rope", "harness", "belay", "bouldering", "carabiner", "chalk",
                              "crimp", "overhang", "lead climbing", "anchor building", "crack climbing",
                              "climbing shoes", "grade", "quickdraw", "top rope", "rappel"]),
    ("fermentation", "food", ["kimchi", "sauerkraut", "kombucha", "brine", "lactobacillus", "miso",
                              "kefir", "vinegar", "mead", "jar", "airlock", "salt ratio", "pickles",
                              "tempeh", "scoby", "mold"]),
    ("knitting", "home", ["yarn", "needles", "cast on", "purl", "cable knit", "sweater", "gauge",
                          "scarf", "socks", "wool", "stitch marker", "blocking", "ribbing", "lace",
                          "colorwork", "bind off"]),
    ("jazz", "arts", ["saxophone", "improvisation", "swing", "bebop", "trumpet", "chord changes",
                      "walking bass", "big band", "blues scale", "standards", "drummer", "piano trio",
                      "solo", "modal jazz", "rhythm section", "scat"]),
    ("robotics", "tech", ["servo", "sensor fusion", "microcontroller", "actuator", "lidar", "arm",
                          "path planning", "motor driver", "gripper", "kinematics", "pid control",
                          "battery", "odometry", "wheels", "camera", "simulation"]),
    ("chemistry", "science", ["molecule", "reaction", "acid", "base", "catalyst", "titration",
                              "periodic table", "electron", "bond", "solvent", "polymer", "oxidation",
                              "ph", "crystallization", "isotope", "lab safety"]),
    ("fishing", "outdoors", ["fly fishing", "lure", "bait", "reel", "trout", "fishing line", "hook",
                             "river", "salmon", "casting", "tackle box", "catch and release", "pike",
                             "bass", "rod", "ice fishing"]),
    ("barbecue", "food", ["brisket", "smoker", "charcoal", "ribs", "dry rub", "pulled pork", "grill",
                          "marinade", "wood chips", "bark", "thermometer", "sauce", "low and slow",
                          "burnt ends", "chicken wings", "resting meat"]),
    ("plumbing", "home", ["pipe", "leak", "faucet", "drain", "water heater", "valve", "toilet",
                          "pressure", "sump pump", "pipe wrench", "solder", "clog", "shutoff",
                          "pex", "trap", "sealant"]),
    ("origami", "arts", ["crane", "paper folding", "crease pattern", "valley fold", "mountain fold",
                         "modular", "kami", "tessellation", "flower", "box", "base fold", "wet folding",
                         "dragon", "star", "frog", "diagram"]),
    ("compilers", "tech", ["parser", "lexer", "syntax tree", "type checker", "register allocation",
                           "optimization", "bytecode", "linker", "grammar", "code generation",
                           "intermediate representation", "inlining", "garbage collector",
                           "assembly", "interpreter", "tokens"]),
    ("ornithology", "science", ["songbird", "migration", "feather", "nest", "owl", "raptor",
                                "binoculars", "bird call", "wetland", "hummingbird", "field guide",
                                "banding", "plumage", "egg", "heron", "bird feeder"]),
    ("kayaking", "outdoors", ["paddle", "spray skirt", "eskimo roll", "sea kayak", "whitewater",
                              "portage", "bilge pump", "dry bag", "current", "capsize", "rapids",
                              "paddle stroke", "buoyancy aid", "river map", "launch", "kayak rack"]),
    ("tea", "food", ["green tea", "oolong", "matcha", "teapot", "steeping", "black tea", "herbal tea",
                     "tea leaves", "gongfu", "chai", "loose leaf", "kettle", "earl grey", "tasting",
                     "caffeine", "tea ceremony"]),
    ("sewing", "home", ["sewing machine", "pattern", "fabric", "seam", "zipper", "hem", "thread",
                        "bobbin", "quilting", "buttonhole", "serger", "cotton", "pleats", "darts",
                        "lining", "alterations"]),
    ("printmaking", "arts", ["linocut", "etching", "screen printing", "woodcut", "brayer", "press",
                             "relief print", "registration", "intaglio", "monotype", "carving",
                             "printing ink", "edition", "burnishing", "lithography", "plate"]),
    ("security", "tech", ["encryption", "password", "firewall rules", "phishing", "tls certificate",
                          "two factor", "vulnerability", "patching", "audit log", "malware",
                          "access control", "hashing", "threat model", "backup keys", "sandbox",
                          "incident response"]),
]
# Niche topics of the tail hosts: rarely linked, yet a few queries ask for them.
TAIL_TOPICS: list[tuple[str, str, list[str]]] = [
    ("lichens", "tail", ["crustose", "foliose", "fruticose", "lichen", "thallus", "symbiosis",
                         "reindeer moss", "usnea", "apothecia", "spot test"]),
    ("bookbinding", "tail", ["signature", "kettle stitch", "bone folder", "book cloth", "coptic binding",
                             "endpapers", "awl", "headband", "case binding", "grain direction"]),
    ("horology", "tail", ["escapement", "balance wheel", "mainspring", "pendulum clock", "watch movement",
                          "tourbillon", "hairspring", "jewel bearing", "regulator", "pocket watch"]),
    ("falconry", "tail", ["hawk", "falcon", "jesses", "mews", "lure training", "hood", "gauntlet",
                          "weathering yard", "austringer", "imprint"]),
    ("perfumery", "tail", ["top notes", "base notes", "essential oil", "accord", "sillage",
                           "tincture", "ambergris", "maceration", "blotter", "eau de parfum"]),
    ("cartography", "tail", ["map projection", "contour line", "scale bar", "legend", "mercator",
                             "survey", "triangulation", "isoline", "relief shading", "atlas"]),
]
HOST_QUALIFIERS = ["notes", "forum", "wiki", "journal", "club", "digest"]
SECTIONS = ["guides", "articles", "reference", "news"]
TITLE_PATTERNS = [
    "{a} basics", "a guide to {a}", "choosing {a}", "{a} and {b}", "how {a} affects {b}",
    "common {a} mistakes", "{a} for beginners", "advanced {a} techniques", "the history of {a}",
    "{a} versus {b}", "caring for your {a}", "{a} checklist", "understanding {a}", "{a} with {b}",
    "{a} tips", "why {a} matters",
]
SENTENCES = [
    "Most people meet {a} long before they think about {b}.",
    "A careful look at {a} shows how much it depends on {b}.",
    "This page explains {a}, {b} and {c} in plain words.",
    "Compare {a} with {b} before you decide what to try first.",
    "Readers often ask how {a} relates to {c}.",
    "Getting {a} right makes {b} much easier.",
    "Experienced hands keep notes on {a} and {b} every season.",
    "There is no single rule for {a}, but {b} is a good place to start.",
    "Small changes in {a} can change {c} a lot.",
    "Clubs and courses teach {a} together with {b}.",
]
LINK_SENTENCES = [
    "See {link} for more on {a}.", "We wrote about this in {link}.",
    "If {a} is new to you, start with {link}.", "{link} goes deeper into {b}.",
    "A related read: {link}.",
]
BACKGROUND_QUERIES = [
    "weather tomorrow", "cheap flights", "lottery results", "news today", "movie times",
    "football scores", "online banking login", "pizza near me", "translate english to french",
    "how old is the universe", "currency converter", "train timetable", "tax return deadline",
    "best smartphone", "recipe for pancakes", "song lyrics", "used cars", "job vacancies",
]
FIRST_QUERY_FREQUENCY = 2000
DAYS = 7  # days of the demo: WARCs and query-log partitions
# (share of pages, changes per day): most pages change rarely, some weekly, a few every day or so.
CHANGE_RATES = ((0.6, 1 / 60), (0.3, 1 / 7), (0.1, 1.0))
HOME_RATE = 1.0  # a home page lists what is new
ADDED_SHARE = 0.06  # pages published over the first CHANGE_HORIZON days, as a share of the first day's
REMOVED_SHARE = 0.03  # older leaf pages, removed over the first CHANGE_HORIZON days
CHANGE_HORIZON = 14
_HTML = "text/html; charset=utf-8"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


# A valid 1x1 PNG, so that image bytes are real.
_PNG = (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + _png_chunk(b"IDAT", zlib.compress(b"\x00\x30\x80\x60")) + _png_chunk(b"IEND", b""))


@dataclass(frozen=True)
class DemoWeb:
    warc: Path  # the web of the first day
    seeds: Path
    query_log_dir: Path
    behaviour: Path
    days: tuple[tuple[date, Path], ...]  # the web of each day, the first day's included


def day_warc(out_dir: Path, day: date, start_date: str) -> Path:
    """The WARC of the demo web of ``day`` in ``out_dir``."""
    return out_dir / ("web.warc.gz" if day == date.fromisoformat(start_date) else f"web-{day.isoformat()}.warc.gz")


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


def _html(page: _Page, seed: int, day: int) -> bytes:
    """The page on ``day``: its text as of its latest change, its links but those to pages not yet published (the
    links to removed pages stay)."""
    rng = random.Random(f"{seed}/{page.url}/{page.changes(seed, day)}")
    words = page.host.words
    blocks = []
    links = [(href, anchor) for href, anchor, target in page.links if target is None or target.appears <= day]
    rng.shuffle(links)
    n_par = 2 + rng.randrange(3)
    paragraphs: list[list[str]] = [[] for _ in range(n_par)]
    for i in range(n_par * (2 + rng.randrange(3))):
        a, b, c = rng.sample(words, 3)
        paragraphs[i % n_par].append(escape(rng.choice(SENTENCES).format(a=a, b=b, c=c).capitalize()))
    for i, (href, anchor) in enumerate(links):
        a, b = rng.sample(words, 2)
        link = f'<a href="{escape(href)}">{escape(anchor)}</a>'
        text = rng.choice(LINK_SENTENCES).format(link=link, a=escape(a), b=escape(b))
        paragraphs[i % n_par].append(text[0].upper() + text[1:])
    for par in paragraphs:
        rng.shuffle(par)
        blocks.append("<p>" + " ".join(par) + "</p>")
    title = escape(page.title)
    nav = "" if page.born < 0 else f'<nav><a href="/">{escape(page.host.topic.capitalize())} home</a></nav>\n'
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
        f'<meta name="description" content="{title}: notes on {escape(", ".join(words[:3]))}.">\n'
        f"</head>\n<body>\n{nav}<main>\n<h1>{title}</h1>\n" + "\n".join(blocks + page.extra_html)
        + f"\n</main>\n<footer>{escape(page.host.name)}, a demo site about {escape(page.host.topic)}."
        "</footer>\n"
        "</body>\n</html>\n"
    ).encode("utf-8")


def _sitemap(host: _Host, day: int) -> bytes:
    entries = "".join(f"<url><loc>{escape(p.url)}</loc></url>" for p in host.pages if p.alive(day))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{entries}</urlset>\n").encode()


_Record = tuple[str, str, str, bytes, tuple[tuple[str, str], ...]]  # url, status, content type, body, more headers


class _Warc:
    """The WARC of one day. ``modified`` (URL -> (digest of the response, since when)), kept over the days in
    order, dates each response's Last-Modified: the first day of the run of days it has been the same."""

    def __init__(self, f: io.BufferedWriter, seed: int, when: datetime,
                 modified: dict[str, tuple[bytes, datetime]]) -> None:
        self.writer = WARCWriter(f, gzip=True)
        self.seed, self.when, self.modified = seed, when, modified
        self.warc_date = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        self.http_date = format_datetime(when, usegmt=True)

    def add(self, url: str, status: str, ctype: str, body: bytes,
            extra: tuple[tuple[str, str], ...] = ()) -> None:
        digest = hashlib.sha256(repr((status, ctype, extra)).encode() + body).digest()
        if self.modified.get(url, (None,))[0] != digest:
            self.modified[url] = (digest, self.when)
        since = self.modified[url][1]
        validators = (("Last-Modified", format_datetime(since, usegmt=True)),
                      ("ETag", f'"{int(since.timestamp()):x}-{len(body):x}"'))
        headers = [("Date", self.http_date), ("Server", "demo-web"), ("Content-Type", ctype),
                   ("Content-Length", str(len(body))), *validators, *extra]
        record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed} {self.warc_date} {url}")
        record = self.writer.create_warc_record(
            url, "response", payload=io.BytesIO(body),
            http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"),
            warc_headers_dict={"WARC-Date": self.warc_date,
                               "WARC-Record-ID": f"<urn:uuid:{record_id}>"})
        self.writer.write_record(record)


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


def _awkward_cases(rng: random.Random, web: list[_Host], pages_list: list[_Page],
                   robots_host: _Host) -> list[_Record]:
    """The records of non-HTML files and redirects (every day's), and links to them, to 404s and to a ``~`` URL
    added to pages not yet rendered. Files and redirects hang from pages that exist every day."""
    records: list[_Record] = []
    regular = [h for h in web if not h.tail]

    def stable(h: _Host) -> list[_Page]:
        return [p for p in h.pages[1:] if p.stable]

    for i, h in enumerate(regular[:3]):
        doc = rng.choice(stable(h))
        slug = _slug(doc.title)
        doc.links.append((f"/files/{slug}.pdf", f"{doc.title} (PDF)", None))
        doc.links.append((f"/files/{slug}.txt", f"{doc.title}, plain text notes", None))
        doc.extra_html.append(f'<p><img src="/images/{slug}.png" alt="{escape(doc.title)} diagram"> '
                              f'<a href="/images/{slug}.png">{escape(doc.title)} diagram</a></p>')
        pdf = (f"%PDF-1.4\n% {doc.title}\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>"
               "\n%%EOF\n").encode()
        records.append((f"http://{h.name}/files/{slug}.pdf", "200 OK", "application/pdf", pdf, ()))
        records.append((f"http://{h.name}/files/{slug}.txt", "200 OK", "text/plain; charset=utf-8",
                        f"{doc.title}\n\nNotes on {', '.join(h.words[i:i + 4])}.\n".encode(), ()))
        records.append((f"http://{h.name}/images/{slug}.png", "200 OK", "image/png", _PNG, ()))
    for h in regular[: max(3, len(pages_list) // 400)]:
        # An old address that moved permanently, still linked from some page.
        target = rng.choice(stable(h))
        old = f"http://{h.name}/archive/{_slug(target.title)}.html"
        records.append((old, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", target.url),)))
        rng.choice(stable(h)).links.append((old, target.title, None))
    chain_host, moved_to = regular[0], regular[1]
    final = rng.choice(stable(moved_to))
    first_hop = f"http://{chain_host.name}/old/{_slug(final.title)}.html"
    second_hop = f"http://{chain_host.name}/moved/{_slug(final.title)}.html"
    records.append((first_hop, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", second_hop),)))
    records.append((second_hop, "301 Moved Permanently", _HTML, b"<p>Moved.</p>", (("Location", final.url),)))
    chain_host.pages[0].links.append((first_hop, final.title, None))
    for h in regular[:4]:
        h.pages[0].links.append(("/latest.html", f"latest {h.topic} article", None))
    for p in rng.sample([p for p in pages_list if p.born >= 0], max(4, len(pages_list) // 60)):
        # A sequel that was never written: a plausible URL that answers 404.
        missing = _title(rng, p.host.words)[0] + " part 2"
        p.links.append((f"http://{p.host.name}/{rng.choice(SECTIONS)}/{_slug(missing)}.html", missing, None))
    editor = f"http://{robots_host.name}/~editor/profile.html"
    robots_host.pages[0].links.append(("/%7Eeditor/profile.html", "about the editor", None))
    robots_host.pages.append(_Page(-1, robots_host, editor, f"About the {robots_host.topic} editor", 0))
    return records


def _latest(h: _Host, day: int) -> _Record:
    """``/latest.html`` of ``h`` on ``day``: a redirect to its newest page of that day."""
    newest = max((p for p in h.pages if p.alive(day)), key=lambda p: p.born)
    return (f"http://{h.name}/latest.html", "302 Found", _HTML, b"<p>See the latest article.</p>",
            (("Location", newest.url),))


def _behaviour(web: list[_Host], n_seeds: int) -> dict[str, dict]:
    """A slow host, and hosts that answer conditional requests as some real servers do: not at all, from one
    Last-Modified for every file, or with no validators to answer from."""
    regular = [h for h in web if not h.tail]
    odd = regular[n_seeds + 3:] + regular[:n_seeds]
    behaviour: dict[str, dict] = {web[n_seeds].name: {"delay": 0.3}}
    for i, rule in enumerate(({"conditional": False}, {"validators": "fixed-date"}, {"validators": "none"})):
        behaviour.setdefault(odd[i % len(odd)].name, {}).update(rule)
    return behaviour


def generate(out_dir: Path, hosts: int = 24, pages: int = 2400, seed: int = 42, days: int = DAYS,
             start_date: str = "2026-11-01") -> DemoWeb:
    """Write the demo web (a WARC per day, seeds, behaviour, query log) into ``out_dir`` and return its paths."""
    most = len(TOPICS) * (len(HOST_QUALIFIERS) + 1) + len(TAIL_TOPICS)
    if not 6 <= hosts <= most:
        raise ValueError(f"demo web hosts must be between 6 and {most}, got {hosts}")
    if pages < 12 * hosts:
        raise ValueError(f"demo web needs at least 12 pages per host ({12 * hosts}), got {pages}")
    if days < 1:
        raise ValueError(f"demo web needs at least one day, got {days}")
    out_dir = Path(out_dir)
    first_day = date.fromisoformat(start_date)
    rng = random.Random(seed)
    n_tail = max(1, min(len(TAIL_TOPICS), hosts // 8))
    n_seeds = max(2, min(5, hosts // 5))
    web = _hosts(hosts, n_tail)
    robots_host, no_robots = web[n_seeds + 1], web[n_seeds + 2]
    added = round(ADDED_SHARE * pages)  # the first day has ``pages`` pages
    pages_list = _build_graph(rng, web, _page_counts(web, pages + added), robots_host)
    _plan_changes(random.Random(f"{seed}/changes"), pages_list, added)
    _add_entry_links(rng, web, n_seeds)
    awkward = _awkward_cases(rng, web, pages_list, robots_host)
    robots = {h.name: "User-agent: *\nDisallow:\n" for h in web if h is not no_robots}
    robots[robots_host.name] = "User-agent: *\nDisallow: /drafts/\nCrawl-delay: 0.2\n"
    # a tail host lists its pages in a sitemap, the rarely linked ones too
    robots[web[-1].name] = f"User-agent: *\nDisallow:\nSitemap: http://{web[-1].name}/sitemap.xml\n"

    out_dir.mkdir(parents=True, exist_ok=True)
    modified: dict[str, tuple[bytes, datetime]] = {}
    versions = []
    for day in range(days):
        when = datetime.combine(first_day + timedelta(days=day - 1), datetime.min.time(), UTC)
        path = day_warc(out_dir, first_day + timedelta(days=day), start_date)
        with path.open("wb") as f:
            warc = _Warc(f, seed, when, modified)
            for record in [*awkward, *(_latest(h, day) for h in [h for h in web if not h.tail][:4])]:
                warc.add(*record)
            for h in web:
                if h is web[-1]:
                    warc.add(f"http://{h.name}/sitemap.xml", "200 OK", "application/xml", _sitemap(h, day))
                if h.name in robots:
                    warc.add(f"http://{h.name}/robots.txt", "200 OK", "text/plain; charset=utf-8",
                             robots[h.name].encode())
                for p in h.pages:
                    if p.alive(day):
                        warc.add(p.url, "200 OK", _HTML, _html(p, seed, day))
        versions.append((first_day + timedelta(days=day), path))

    seeds_path = out_dir / "seeds.txt"
    seeds_path.write_text("".join(h.home + "\n" for h in web[:n_seeds]))
    behaviour_path = out_dir / "behaviour.json"
    behaviour_path.write_text(json.dumps(_behaviour(web, n_seeds), indent=1, sort_keys=True) + "\n")
    log_dir = out_dir / "query_log"
    ranked, reserve = _query_pool(rng, web, pages_list)
    for day in range(days):
        part = log_dir / f"dt={(first_day + timedelta(days=day)).isoformat()}"
        part.mkdir(parents=True, exist_ok=True)
        (part / "queries.tsv").write_text(_query_day(ranked, reserve, seed, day))
    return DemoWeb(versions[0][1], seeds_path, log_dir, behaviour_path, tuple(versions))
