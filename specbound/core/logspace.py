"""Arithmetic on natural logarithms, for products that overflow float64.

The depth factor alpha is a product over layers of spectral norms, and the Edelman-style proxy raises
a sum of such products to the power 3/2: for deep or large-norm models both exceed the largest
float64 (about 1.8e308, e^709.78). specbound therefore carries every product as a natural log and
turns it into a plain number only at the edge, where an overflow becomes ``inf`` (and then ``null``
in JSON) while its log10 twin always stands.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: ln of the largest float64: exp of anything above overflows.
LOG_MAX: float = math.log(float(np.finfo(np.float64).max))
#: ln of the smallest positive normal float64, the floor of the scale s_W (SPEC §3).
LOG_TINY: float = math.log(float(np.finfo(np.float64).tiny))
#: log10(e): multiplies a natural log into a decimal one.
LOG10_E: float = 1.0 / math.log(10.0)
#: ln 10: a log10 value times this is a natural log (records that keep log10, read by natural-log code).
LN_10: float = math.log(10.0)


def to_log10(log_value: ArrayLike) -> NDArray[np.float64]:
    """Natural log to log10 (element-wise); -inf (the log of zero) stays -inf."""
    return np.asarray(log_value, dtype=np.float64) * LOG10_E


def exp_or_inf(log_value: float) -> float:
    """exp(log_value), or inf where that overflows float64 (instead of raising OverflowError)."""
    try:
        return math.exp(log_value)
    except OverflowError:
        return math.inf


def exp_array(log_values: ArrayLike) -> NDArray[np.float64]:
    """Element-wise exp with inf on overflow and no floating-point warning."""
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(log_values, dtype=np.float64))


def logsumexp(x: ArrayLike, axis: int | None = None) -> NDArray[np.float64]:
    """ln sum exp(x) along ``axis`` (all entries when None), exact for -inf entries.

    The largest entry is factored out first, so nothing overflows; a sum of only -inf entries (the
    log of an empty or all-zero sum) is -inf.
    """
    values = np.asarray(x, dtype=np.float64)
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(values - top).sum(axis=axis, keepdims=True)) + top
    result: NDArray[np.float64] = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return result


def safe_log(x: ArrayLike) -> NDArray[np.float64]:
    """Element-wise natural log with ln 0 = -inf and no divide-by-zero warning."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=np.float64))
