"""WARC records to pages and links: main-text extraction, URL canonicalization, SimHash, parse cache."""
