"""bundler's tests (a package so helpers import as `tests.harness.winenv`)."""
