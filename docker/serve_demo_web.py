"""Serve the demo web to the other containers: generate it into ``<data_dir>/demo-web`` when missing, then
serve today's web on every interface of this container (``crawlcycle demo-web --serve`` listens on loopback only)."""

from crawlcycle.devtools import demo
from crawlcycle.settings.sources import load_settings

demo.serve_forever(load_settings(), host="0.0.0.0")
