"""The bodies of the demo web's pages: the HTML of a page on a day, and the sitemap of a host.

A page's text is made of sentences (``crawlcycle.devtools.demo_vocabulary``) about its host's topic words. On a day
when a page changes (``crawlcycle.devtools.demo_link_graph``), its text is written anew (same title and links; the
text of a page is a function of the seed, the URL and the number of changes so far).
"""

from __future__ import annotations

import random
from html import escape

from crawlcycle.devtools.demo_link_graph import _Host, _Page
from crawlcycle.devtools.demo_vocabulary import LINK_SENTENCES, SENTENCES


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
