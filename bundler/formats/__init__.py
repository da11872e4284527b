"""bundler's own file formats: the manifest, the lock, the swap journal."""
