"""The entry points a notebook or the command line calls: :func:`analyze` and its :class:`Analysis`,
trajectories of training runs, the Trainer callback and the grid of models.

The top of the library, under only the command line (``specbound.cli``) and the package itself.
"""

from __future__ import annotations

from .analysis import Analysis, analyze

__all__ = ["Analysis", "analyze"]
