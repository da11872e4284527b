"""The diagnosis tools: `bundler verify`, `bundler inspect` and `bundler doctor`.

They read bundles (through bundler.formats.manifest), DLLs, archives and this machine; they
never change anything.
"""
