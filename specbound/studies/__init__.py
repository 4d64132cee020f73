"""Questions asked of several profiles: comparisons, the random twin, the scaling study, and the
resumable, parallel execution of batches of models or runs.

Reads the core and the I/O layer.

The names in ``__all__`` are this layer's public surface: what a package built on specbound (the
lab beside it, ``specbound_lab``) imports, and all it may import (``tests/lab/test_public_api.py``).
"""

from __future__ import annotations

from .parallel import Executor, run_tasks
from .resumable import Outcome, run_resumable
from .status import Status
from .trajectory import CentredTerms, StepTerms

__all__ = [
    "CentredTerms",
    "Executor",
    "Outcome",
    "Status",
    "StepTerms",
    "run_resumable",
    "run_tasks",
]
