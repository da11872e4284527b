"""The packer: `bundler pack` builds an app folder that carries its own runtime.

spec -> recipe -> sources -> stage -> resolve -> emit -> lock, run by pipeline.py
inside an atomic output folder (output.py); builders/ make the app itself.
"""
