"""Small building blocks shared by the packer and the diagnosis tools: streaming hashes,
a zip reader, TOML tables with clear errors, progress bars and text tables."""
