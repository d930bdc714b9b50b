"""What the stages agree on: shard files and their schemas, the canonical URL form, the URL state model (states,
fetch outcomes, checks and their transitions), the policy registries and the error for bad input. Every other
package imports these; this package imports none of them (``tests/test_architecture.py``)."""
