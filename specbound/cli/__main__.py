"""``python -m specbound.cli``: the same program as the ``specbound`` command."""

import sys

from .program import main

sys.exit(main())
