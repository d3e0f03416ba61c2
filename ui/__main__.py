"""`python -m ui [options]` is `rag ui [options]`: the CLI builds the service and starts the app."""

import sys

from rag.cli import main

sys.exit(main(["ui", *sys.argv[1:]]))
