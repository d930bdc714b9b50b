"""What the stages agree on: shard files and their schemas, the canonical URL form, a batch URL's outcomes, the
policy registry and the error for bad input. Every other package imports these; this package imports none of them
(``tests/test_architecture.py``)."""
