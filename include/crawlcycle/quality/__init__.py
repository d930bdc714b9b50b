"""Great Expectations data-quality gates between stages."""
