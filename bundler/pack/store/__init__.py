"""The runtime store: objects by sha256, its seal, its upkeep, kept zip streams."""
