"""One resumable batch: the skeleton every batch of the package runs on (a grid of models, the steps of a
training run, the lab's sweep of runs).

Items that an earlier invocation finished are skipped (``finished`` looks at what it left); the others are
worked on serially in this process, in worker processes or on a Dask cluster (:func:`run_tasks`), and
each answer is kept (its files written, by ``keep``) here, in the driving process, as it arrives. So
the output directory ends as a serial run leaves it, wherever the work ran, and a killed run resumes
where it stopped: an item is finished exactly when its files are.

Several writers may share one directory item by item: ``hold(item)`` is held while an item is worked on
and kept (a claim), and what it guards is read again once it is held, since the writer it waited for
may have finished the item meanwhile. Serially an item is held only while it is done; in parallel every
item to do is held before any is dispatched.

Examples:
    >>> from specbound.studies import Executor
    >>> kept = {}
    >>> outcomes = run_resumable(
    ...     [1, 2, 3],
    ...     work=lambda n: n * n,
    ...     keep=lambda n, square: kept.setdefault(n, square),
    ...     finished=lambda n: n == 2,  # an earlier invocation did 2
    ... )
    >>> [(o.item, o.status.value, o.kept) for o in outcomes]
    [(1, 'done', 1), (2, 'skipped', None), (3, 'done', 9)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .parallel import Executor, run_tasks
from .status import Status

Item = TypeVar("Item")
Answer = TypeVar("Answer")
Kept = TypeVar("Kept")

#: Why an item was skipped: finished before this invocation looked, or by another writer it waited for.
ALREADY_DONE, DONE_BY_OTHER_WRITER = "already done", "finished by the other writer"


@dataclass(frozen=True)
class Outcome(Generic[Item, Answer, Kept]):
    """What became of one item of a batch."""

    index: int  # the item's position in the batch
    item: Item
    status: Status  # DONE (worked on and kept), SKIPPED (finished before) or MISSING (nothing to keep)
    kept: Kept | None = None  # what ``keep`` returned (DONE)
    answer: Answer | None = None  # the work's answer (DONE, MISSING: it says why)
    why_skipped: str = ""  # ALREADY_DONE or DONE_BY_OTHER_WRITER


def _no_hold(item: Any) -> AbstractContextManager[Any]:
    return nullcontext()


def run_resumable(
    items: Sequence[Item],
    work: Callable[[Item], Answer],
    keep: Callable[[Item, Answer], Kept | None],
    *,
    executor: Executor = Executor(),
    in_process: Callable[[Item], Answer] | None = None,
    finished: Callable[[Item], bool] | None = None,
    hold: Callable[[Item], AbstractContextManager[Any]] = _no_hold,
    prepare: Callable[[Item], None] | None = None,
    on_dispatch: Callable[[Sequence[Item]], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> Iterator[Outcome[Item, Answer, Kept]]:
    """Each item's :class:`Outcome`, as it happens: in order when serial, as the work finishes otherwise.

    ``work(item)`` computes an answer anywhere (a module-level function with picklable items and
    answers when the executor is not serial); ``in_process`` replaces it in a serial run (to report
    progress, or to be cancelled, through what cannot travel to another process). ``keep(item, answer)``
    writes the answer's files here and returns what the caller keeps of it, or None when the answer
    holds nothing to keep (MISSING: it says why). ``finished(item)`` says whether an earlier invocation
    finished the item; ``prepare(item)`` clears what an unfinished one left, once the item is held.
    ``on_dispatch(todo)`` hears which items go to other processes before any does (parallel only).
    ``should_stop()`` is asked between items: once True, no further item starts (in parallel, the items
    already running finish and are kept; :func:`~specbound.studies.parallel.run_tasks`).
    Exceptions of ``work``, ``keep`` and ``hold`` propagate: the items kept so far stay kept.
    """
    prepare = prepare or (lambda item: None)
    if executor.serial:
        for index, item in enumerate(items):
            yield from _serially(index, item, work if in_process is None else in_process, keep, finished, hold, prepare)
        return
    with ExitStack() as holds:
        todo: list[int] = []
        for index, item in enumerate(items):
            if finished is not None and finished(item):
                yield Outcome(index, item, Status.SKIPPED, why_skipped=ALREADY_DONE)
                continue
            holds.enter_context(hold(item))
            if finished is not None and finished(item):
                yield Outcome(index, item, Status.SKIPPED, why_skipped=DONE_BY_OTHER_WRITER)
                continue
            prepare(item)
            todo.append(index)
        if on_dispatch is not None:
            on_dispatch([items[index] for index in todo])
        for position, answer in run_tasks(work, [items[index] for index in todo], executor, should_stop=should_stop):
            index = todo[position]
            yield _kept(index, items[index], answer, keep)


def _serially(
    index: int,
    item: Item,
    work: Callable[[Item], Answer],
    keep: Callable[[Item, Answer], Kept | None],
    finished: Callable[[Item], bool] | None,
    hold: Callable[[Item], AbstractContextManager[Any]],
    prepare: Callable[[Item], None],
) -> Iterator[Outcome[Item, Answer, Kept]]:
    """One item in this process: skipped if finished, else held while it is worked on and kept."""
    if finished is not None and finished(item):
        yield Outcome(index, item, Status.SKIPPED, why_skipped=ALREADY_DONE)
        return
    with hold(item):
        if finished is not None and finished(item):
            outcome = Outcome[Item, Answer, Kept](index, item, Status.SKIPPED, why_skipped=DONE_BY_OTHER_WRITER)
        else:
            prepare(item)
            outcome = _kept(index, item, work(item), keep)
    yield outcome


def _kept(
    index: int, item: Item, answer: Answer, keep: Callable[[Item, Answer], Kept | None]
) -> Outcome[Item, Answer, Kept]:
    kept = keep(item, answer)
    return Outcome(index, item, Status.MISSING if kept is None else Status.DONE, kept, answer)
