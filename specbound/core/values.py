"""Small checks of values read from files and configs, shared by every reader of a declared size.

A JSON file or a config.json says ``2``, ``2.0``, ``true`` or ``"2"`` alike; only the first is an
integer size. These checks have no limits and no messages of their own: the caller refuses with its
own line (:mod:`specbound.core.limits` for sizes above a maximum, :mod:`specbound.io.families.config` for a
config's fields, :class:`specbound.core.architecture.ModelShape` for a stored shape).
"""

from __future__ import annotations

from typing import TypeGuard, cast

import numpy as np


def is_genuine_int(value: object) -> TypeGuard[int | np.integer]:
    """An integer size as a file declares it: an int (numpy's too), never a bool or a float like 2.0."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_real_number(value: object, *, finite: bool = False) -> TypeGuard[int | float | np.integer | np.floating]:
    """A number as a file or a caller gives one: an int or a float (numpy's too), never a bool (which
    Python counts as an int), a string or None; with ``finite``, not NaN or infinite either.

    A Python int has no size limit (JSON's ``100000000000000000000`` is one), while everything after
    this check computes in float64: an int is a real number when it converts to a (necessarily finite)
    float, so ``10**20`` is one and ``10**400`` is not. It is tested by that conversion, never by
    numpy, which has no dtype for an int beyond 64 bits and raises TypeError on it.

    Example:
        >>> is_real_number(2.0), is_real_number(True), is_real_number("2"), is_real_number(float("nan"), finite=True)
        (True, False, False, False)
        >>> is_real_number(10**20, finite=True), is_real_number(10**400)
        (True, False)
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return False
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            return False
        return True
    return not finite or bool(np.isfinite(value))


def check_number(
    value: object,
    name: str,
    low: float | None = None,
    high: float | None = None,
    *,
    integer: bool = False,
    open_low: bool = False,
    open_high: bool = False,
    error: type[Exception] = ValueError,
) -> None:
    """Nothing when ``value`` is a finite number (an integer with ``integer``) within the bounds, else
    ``error`` with one line naming ``name``, the interval and what was given.

    The one check behind every "a number in this range" of the package, in the spirit of
    scikit-learn's ``check_scalar``: a bool is never a number, NaN and infinities are refused, and the
    interval is closed unless ``open_low`` / ``open_high`` say otherwise; a bound of None is no bound.

    Example:
        >>> check_number(3, "layers", 1, 12, integer=True)  # within: nothing to say
        >>> check_number(0.5, "label noise", 0, 0.5, open_high=True)
        Traceback (most recent call last):
        ...
        ValueError: label noise must be a number in [0, 0.5), got 0.5
        >>> check_number(True, "steps", 1, integer=True)
        Traceback (most recent call last):
        ...
        ValueError: steps must be an integer >= 1, got True
    """
    kind = "an integer" if integer else "a number"
    if low is not None and high is not None:
        where = f"{kind} in {'(' if open_low else '['}{_bound(low)}, {_bound(high)}{')' if open_high else ']'}"
    elif low is not None:
        where = f"{kind} {'>' if open_low else '>='} {_bound(low)}"
    elif high is not None:
        where = f"{kind} {'<' if open_high else '<='} {_bound(high)}"
    else:
        where = f"a finite {kind.removeprefix('a ').removeprefix('an ')}"
    ok = is_genuine_int(value) if integer else is_real_number(value, finite=True)
    if ok:
        # compared as it is, never through float(): Python compares an int of any size with a float exactly
        number = cast(float, value)
        ok = (low is None or (number > low if open_low else number >= low)) and (
            high is None or (number < high if open_high else number <= high)
        )
    if not ok:
        raise error(f"{name} must be {where}, got {value!r}")


def _bound(bound: float) -> str:
    """A bound as a message writes it: an integer whole (2147483647), a float as short as it reads (1e-09)."""
    return str(bound) if isinstance(bound, int) else f"{bound:g}"
