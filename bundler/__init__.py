"""bundler: make GPU applications carry their own cuDNN runtime."""

__version__ = "0.1.0"
