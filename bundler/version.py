"""bundler's version, in a module of its own so that every part can name it."""

__version__ = "0.1.0"
