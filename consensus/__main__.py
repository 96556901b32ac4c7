"""``python -m consensus``: the same as the ``consensus`` console script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
