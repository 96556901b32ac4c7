"""``python -m empirical``: the command line of :mod:`empirical.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
