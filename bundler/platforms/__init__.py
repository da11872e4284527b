"""The platform seam: the registry of platforms and the shapes every platform fills."""
