"""`pack --zip`: the bundle as one deterministic zip."""
