"""Serve the demo web to the other containers: generate it into ``<data_dir>/demo-web`` when missing, then
serve it on every interface of this container (``crawlcycle demo-web --serve`` listens on loopback only)."""

from crawlcycle.devtools import demo
from crawlcycle.devtools.warc_server import run_forever
from crawlcycle.settings import load_settings

settings = load_settings()
run_forever([demo.ensure_demo_web(settings)], host="0.0.0.0", port=settings.demo_port,
            behaviour=demo._behaviour(settings))
