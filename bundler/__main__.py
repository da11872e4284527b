import sys

from bundler.cli import main

sys.exit(main())
