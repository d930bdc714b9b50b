"""Code the test modules share: servers, settings and hand-built crawl states (no test module imports another)."""
