"""``python -m consensus``: the same as the ``consensus`` console script, named as it was run (usage, help and errors
say ``python -m consensus``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m consensus"))
