"""What ships inside every packed app: the bootstrap (bootstrap.py), standard library
only. bundler itself imports it only to share the driver check with doctor."""
