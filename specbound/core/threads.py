"""How many threads the native libraries use: the one place that changes it, always for a block only.

* :func:`serial_blas`: BLAS (and so LAPACK) on one thread, through threadpoolctl. On the small
  problems of :mod:`specbound.core.spectrum` a second thread gains little on an idle machine, while
  OpenBLAS's spinning threads made them 10 to 90 times slower whenever another process shared the
  cores. With ``openmp`` every OpenMP pool is held to one thread as well (a task of
  :mod:`specbound.studies.parallel` beside others).
* :func:`torch_threads`: torch's intra-op thread count for a block, restored afterwards.

torch keeps its count per thread (OpenMP's and MKL's settings are the calling thread's), and a new
thread starts from the count most recently set by any thread. A plain save-and-restore is right for
one thread and for nested blocks; but when the blocks of two threads overlap (layers analysed in
parallel), the second starts from the first's count and, finishing last, would leave that count
behind for every later thread. :func:`torch_threads` therefore counts the blocks open in the whole
process: a block restores its own thread's previous count, and the last one to close restores the
count from before the first one opened.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from threadpoolctl import threadpool_limits

__all__ = ["serial_blas", "torch_threads"]


def serial_blas(*, openmp: bool = False) -> threadpool_limits:
    """Context in which BLAS (and so LAPACK) runs on one thread; with ``openmp``, every OpenMP pool too."""
    return threadpool_limits(limits=1, user_api=None if openmp else "blas")


_lock = threading.Lock()
_open_blocks = 0
_count_before = 0  # torch's count when the first of the open blocks began


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch on ``count`` intra-op threads for the block, the previous count restored after it
    (reentrant, and safe for blocks that overlap in several threads: module docstring)."""
    import torch

    global _open_blocks, _count_before
    with _lock:
        previous = torch.get_num_threads()
        if _open_blocks == 0:
            _count_before = previous
        _open_blocks += 1
        torch.set_num_threads(count)
    try:
        yield
    finally:
        with _lock:
            _open_blocks -= 1
            torch.set_num_threads(previous if _open_blocks else _count_before)
