"""How many threads the native libraries use: the one place that changes it, always for a block only.

* :func:`serial_blas`: BLAS (and so LAPACK) on one thread, through threadpoolctl. On the small
  problems of :mod:`specbound.spectrum` a second thread gains little on an idle machine, while
  OpenBLAS's spinning threads made them 10 to 90 times slower whenever another process shared the
  cores. With ``openmp`` every OpenMP pool is held to one thread as well (a task of
  :mod:`specbound.parallel` beside others).
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

__all__ = ["serial_blas"]


def serial_blas(*, openmp: bool = False) -> threadpool_limits:
    """Context in which BLAS (and so LAPACK) runs on one thread; with ``openmp``, every OpenMP pool too."""
    return threadpool_limits(limits=1, user_api=None if openmp else "blas")
