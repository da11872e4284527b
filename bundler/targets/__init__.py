"""The target platforms bundler knows, registered above the OS packages (registry.py)."""
