"""``python -m specbound.cli``: the same program as the ``specbound`` command."""

import sys

from .program import main

if __name__ == "__main__":  # imported (a tool listing every module), it runs nothing
    sys.exit(main())
