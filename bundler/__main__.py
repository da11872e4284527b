import sys

from bundler import launch

sys.exit(launch())
