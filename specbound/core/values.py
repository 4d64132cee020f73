"""Small checks of values read from files and configs, shared by every reader of a declared size.

A JSON file or a config.json says ``2``, ``2.0``, ``true`` or ``"2"`` alike; only the first is an
integer size. These checks have no limits and no messages of their own: the caller refuses with its
own line (:mod:`specbound.core.limits` for sizes above a maximum, :mod:`specbound.io.families.config` for a
config's fields, :class:`specbound.core.architecture.ModelShape` for a stored shape).
"""

from __future__ import annotations

from typing import TypeGuard

import numpy as np


def is_genuine_int(value: object) -> TypeGuard[int | np.integer]:
    """An integer size as a file declares it: an int (numpy's too), never a bool or a float like 2.0."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_real_number(value: object, *, finite: bool = False) -> TypeGuard[int | float | np.integer | np.floating]:
    """A number as a file or a caller gives one: an int or a float (numpy's too), never a bool (which
    Python counts as an int), a string or None; with ``finite``, not NaN or infinite either.

    Example:
        >>> is_real_number(2.0), is_real_number(True), is_real_number("2"), is_real_number(float("nan"), finite=True)
        (True, False, False, False)
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return False
    return not finite or bool(np.isfinite(value))
