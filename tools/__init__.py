"""Generators of bundler's shipped catalogues; run from a checkout, never shipped."""
