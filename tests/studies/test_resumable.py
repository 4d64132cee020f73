"""The one resumable batch driver: what is skipped, held, prepared, worked on and kept, serially and in
worker processes, and that the answers of other processes are kept in this one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager

import pytest

from specbound.studies import Executor, Status
from specbound.studies.resumable import ALREADY_DONE, DONE_BY_OTHER_WRITER, run_resumable


def square_with_pid(n: int) -> tuple[int, int]:
    """n², and the process that computed it (module-level: it travels to worker processes)."""
    return n * n, os.getpid()


def slow_square(n: int) -> int:
    """n², after half a second (module-level: it travels to worker processes)."""
    time.sleep(0.5)
    return n * n


class Journal:
    """A batch's callbacks that write down, in order, what the driver asked of them."""

    def __init__(
        self, done_before: AbstractSet[int] = frozenset(), done_while_waiting: AbstractSet[int] = frozenset()
    ) -> None:
        self.events: list[str] = []
        self.kept: dict[int, int] = {}
        self.done_before, self.done_while_waiting = set(done_before), set(done_while_waiting)
        self.held: set[int] = set()

    def finished(self, n: int) -> bool:
        return n in self.done_before or n in self.kept or (n in self.held and n in self.done_while_waiting)

    @contextmanager
    def hold(self, n: int) -> Iterator[None]:
        self.events.append(f"hold {n}")
        self.held.add(n)
        yield
        self.events.append(f"release {n}")

    def prepare(self, n: int) -> None:
        self.events.append(f"prepare {n}")

    def work(self, n: int) -> tuple[int, int]:
        self.events.append(f"work {n}")
        return square_with_pid(n)

    def keep(self, n: int, answer: tuple[int, int]) -> int | None:
        self.events.append(f"keep {n}")
        if n < 0:  # the answer says there is nothing to keep
            return None
        self.kept[n] = answer[0]
        return answer[0]


def test_serially_each_item_is_skipped_or_held_while_it_is_done() -> None:
    journal = Journal(done_before={2}, done_while_waiting={3})
    outcomes = list(
        run_resumable(
            [1, 2, 3, -4],
            journal.work,
            journal.keep,
            finished=journal.finished,
            hold=journal.hold,
            prepare=journal.prepare,
        )
    )
    assert [(o.index, o.item, o.status, o.kept, o.why_skipped) for o in outcomes] == [
        (0, 1, Status.DONE, 1, ""),
        (1, 2, Status.SKIPPED, None, ALREADY_DONE),
        (2, 3, Status.SKIPPED, None, DONE_BY_OTHER_WRITER),
        (3, -4, Status.MISSING, None, ""),
    ]
    assert outcomes[3].answer == (16, os.getpid())  # a missing item's answer says why
    assert journal.events == [
        *("hold 1", "prepare 1", "work 1", "keep 1", "release 1"),  # never held: 2, done before
        *("hold 3", "release 3"),  # finished by the writer it waited for: not worked on
        *("hold -4", "prepare -4", "work -4", "keep -4", "release -4"),
    ]


def test_in_process_replaces_the_work_in_a_serial_run_only() -> None:
    journal = Journal()
    outcomes = run_resumable([5], square_with_pid, journal.keep, in_process=journal.work)
    assert [o.kept for o in outcomes] == [25] and "work 5" in journal.events


@pytest.mark.slow
def test_in_worker_processes_every_item_is_held_before_any_is_dispatched_and_kept_here(own_main_module: None) -> None:
    journal = Journal(done_before={2}, done_while_waiting={3})
    dispatched: list[list[int]] = []
    outcomes = list(
        run_resumable(
            [1, 2, 3, 4],
            square_with_pid,
            journal.keep,
            executor=Executor(workers=2),
            in_process=journal.work,  # not used: the work runs in the workers
            finished=journal.finished,
            hold=journal.hold,
            prepare=journal.prepare,
            on_dispatch=lambda todo: dispatched.append(list(todo)),
        )
    )
    assert dispatched == [[1, 4]]
    by_item = {o.item: o for o in outcomes}
    assert {n: (o.status, o.kept) for n, o in by_item.items()} == {
        1: (Status.DONE, 1),
        2: (Status.SKIPPED, None),
        3: (Status.SKIPPED, None),
        4: (Status.DONE, 16),
    }
    first, fourth = by_item[1].answer, by_item[4].answer
    assert first is not None and fourth is not None
    assert {first[1], fourth[1]} != {os.getpid()}  # computed elsewhere ...
    assert journal.kept == {1: 1, 4: 16}  # ... and kept here
    first_work = min(journal.events.index(f"keep {n}") for n in (1, 4))
    assert journal.events.index("hold 4") < first_work and journal.events.index("prepare 4") < first_work
    assert "work 1" not in journal.events
    assert journal.events[-3:] == ["release 4", "release 3", "release 1"]  # held to the end, released last first


@pytest.mark.slow
def test_in_worker_processes_no_item_starts_once_should_stop_says_so(own_main_module: None) -> None:
    """A long batch stopped between items (``study run --minutes`` with workers): after the first answer
    nothing more is started; what the two workers already hold (one running each, and up to workers + 1
    items already in the process pool's call queue) finishes and is kept; the rest is cancelled."""
    kept: list[int] = []

    def keep(n: int, answer: int) -> int:
        kept.append(n)
        return answer

    outcomes = list(
        run_resumable(
            list(range(12)),
            slow_square,
            keep,
            executor=Executor(workers=2),
            should_stop=lambda: bool(kept),
        )
    )
    assert 1 <= len(outcomes) <= 2 + (2 + 1) + 1 < 12 and len(kept) == len(outcomes)
    assert all(o.status is Status.DONE and o.kept == o.item**2 for o in outcomes)
    # without the stop, every item is computed
    assert len(list(run_resumable(list(range(6)), square_with_pid, lambda n, a: a, executor=Executor(workers=2)))) == 6
