"""Fetching a shard of URLs: HTTP client and its guards, politeness, robots.txt, sitemaps, WARC output."""
