"""Every cuDNN release bundler knows: the generated catalogue and the families that render
recipes."""
