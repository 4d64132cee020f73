"""Many independent analyses at once: in this process, in local worker processes, or on a Dask cluster.

``grid``, ``trajectory`` and ``lab sweep`` hand :func:`run_tasks` one task per checkpoint (or run): a
picklable top-level function and its argument. Each task returns its record, names and numbers
(never weights); the driver alone writes files, in the order of the inputs, so a parallel run writes
exactly the files of a serial one and resumes the same way.

* ``Executor(workers=1)``: in this process, in order (the default);
* ``Executor(workers=N)``: N local processes (``spawn``ed, so no thread state of this process leaks
  into them);
* ``Executor(dask="tcp://host:8786")``: the tasks go to a running ``dask.distributed`` scheduler, with
  two retries for a task whose worker is lost. Each worker analyses with its own Hub cache and profile
  cache (``HF_HOME``, ``SPECBOUND_CACHE`` in its environment).

Outside this process a task runs on one thread (BLAS and torch): the parallelism is across tasks, and
two tasks that each spread over every core of a 2-core machine ran 2.5 to 3 times slower apiece
than one alone.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.errors import SpecboundError
from ..core.text import quoted
from ..io.options import ComputeOptions

T = TypeVar("T")
R = TypeVar("R")

#: How often Dask runs a task again whose worker was lost before it finished.
DASK_RETRIES = 2
#: The schemes of dask.distributed's communication layer; an address without one is ``tcp``.
DASK_SCHEMES: tuple[str, ...] = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_USER_INFO = re.compile(r"^((?:[a-z0-9+.-]*://)?).*@", re.IGNORECASE | re.DOTALL)


def redacted(address: str) -> str:
    """``address`` with everything between its scheme and its last ``@`` (a user name, a password) as
    ``***``, escaped and shortened for a message."""
    return quoted(_USER_INFO.sub(r"\1***@", address))


def check_dask_address(address: str) -> str:
    """``[scheme://]host[:port]`` as dask.distributed takes it, else SpecboundError in one line that
    never shows a password: Dask addresses carry no credentials (TLS is set in Dask's own
    configuration), the scheme is one of :data:`DASK_SCHEMES`, the port a number from 1 to 65535."""
    example = "e.g. tcp://127.0.0.1:8786"
    if not address.strip():
        raise SpecboundError(f"--dask needs the address of a Dask scheduler, {example}")
    shown = redacted(address)
    if "@" in address:
        raise SpecboundError(
            f"--dask {shown}: a Dask address holds no user name or password (TLS credentials go in Dask's "
            f"configuration), {example}"
        )
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in DASK_SCHEMES:
        raise SpecboundError(
            f"--dask {shown}: '{quoted(scheme)}' is not a scheme Dask speaks ({', '.join(DASK_SCHEMES)}), {example}"
        )
    if scheme == "inproc":
        return address
    host, colon, port = rest.rpartition(":") if not rest.endswith("]") else ("", "", "")
    if not colon:  # no port: Dask's default
        host = rest
    if not host or any(c in host for c in "/?# "):
        raise SpecboundError(f"--dask {shown}: no host name before the port, {example}")
    if colon and not (port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        raise SpecboundError(f"--dask {shown}: the port '{quoted(port)}' is not a number from 1 to 65535, {example}")
    return address


@dataclass(frozen=True)
class Executor:
    """Where tasks run: ``workers`` local processes (1: this process), or a Dask scheduler's ``dask`` address."""

    workers: int = 1
    dask: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.workers <= 1024:
            raise SpecboundError(f"--workers must be between 1 and 1024, got {self.workers}")
        if self.dask is not None:
            check_dask_address(self.dask)

    @property
    def serial(self) -> bool:
        return self.dask is None and self.workers == 1

    def compute_options(self, compute: ComputeOptions | None) -> ComputeOptions:
        """load_profile's compute options for each task: tasks that run side by side already use the
        cores, so each analyses one layer at a time unless told otherwise."""
        options = compute or ComputeOptions()
        if not self.serial and options.workers is None:
            options = dataclasses.replace(options, workers=1)
        return options

    def describe(self) -> str:
        if self.dask is not None:
            return f"on the Dask scheduler at {redacted(self.dask)}"
        return "in this process" if self.workers == 1 else f"in {self.workers} worker processes"


def run_tasks(
    task: Callable[[T], R],
    items: Sequence[T],
    executor: Executor = Executor(),
    *,
    should_stop: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[int, R]]:
    """(index, result) of ``task(item)`` for every item: in order when serial, as they finish otherwise.

    ``task`` must be a module-level function and its items and results picklable, for the processes
    and the cluster. An exception in a task propagates (tasks report expected failures in their result).
    ``should_stop`` is asked after each result: once it says True, no further item is started (in
    worker processes, the items already running finish and are yielded; the queued ones are cancelled),
    so a caller can stop a long batch between items whatever the executor (a Dask cluster's queue
    is not cancelled: it runs to its end).
    """
    if not items:
        return
    if executor.serial:
        for index, item in enumerate(items):
            yield index, task(item)
            if should_stop():
                return
    elif executor.dask is not None:
        yield from _on_dask(task, items, executor.dask)
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(executor.workers, len(items)), mp_context=context) as pool:
            futures = {pool.submit(_single_threaded, task, item): index for index, item in enumerate(items)}
            stopping = False
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                yield futures[future], future.result()
                if not stopping and should_stop():
                    stopping = True
                    for queued in futures:
                        queued.cancel()  # a running task cannot be cancelled: it finishes and is yielded


def _on_dask(task: Callable[[T], R], items: Sequence[T], address: str) -> Iterator[tuple[int, R]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise SpecboundError("--dask needs dask.distributed (pip install 'specbound[dask]')") from None
    try:  # within Dask's connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)
        client = Client(address)
    except (OSError, ValueError, TypeError) as exc:  # unreachable, or an address Dask itself cannot parse
        reason = quoted(str(exc).replace(address, redacted(address)), 200)
        raise SpecboundError(f"cannot reach the Dask scheduler at {redacted(address)}: {reason}") from None
    try:
        futures = [client.submit(_single_threaded, task, item, pure=False, retries=DASK_RETRIES) for item in items]
        index_of = {future.key: index for index, future in enumerate(futures)}
        for future, result in dask_completed(futures, with_results=True):
            yield index_of[future.key], result
    finally:
        client.close()


def _single_threaded(task: Callable[[T], R], item: T) -> R:
    """``task(item)`` with BLAS and torch on one thread (see the module docstring)."""
    from ..core.threads import serial_blas, torch_threads

    with torch_threads(1), serial_blas(openmp=True):
        return task(item)


def in_input_order(results: Iterator[tuple[int, R]], count: int) -> list[R]:
    """The results of :func:`run_tasks` in the order of their inputs."""
    ordered: list[Any] = [None] * count
    for index, result in results:
        ordered[index] = result
    return ordered
