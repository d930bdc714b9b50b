"""Ordering policies: the registry, and the policies that need more than SQL."""
