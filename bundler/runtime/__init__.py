"""What ships inside every packed app: the bootstrap (bootstrap.py, with the loader of
the app's platform, bootstrap_windows.py or bootstrap_linux.py, put in by `bundler
pack`), standard library only. bundler itself imports it only to share the driver check
with doctor; importing the package imports the bootstrap first, so either loader may be
imported on its own (each takes the names it shares from the bootstrap)."""

from . import bootstrap  # noqa: F401
