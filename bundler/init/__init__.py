"""`bundler init`: a first spec from what an app folder holds."""
