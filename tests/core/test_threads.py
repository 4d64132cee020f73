"""The thread counts of the native libraries: changed for a block only, and restored after it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import pytest
from threadpoolctl import threadpool_info

from specbound.core.threads import serial_blas, torch_threads

T = TypeVar("T")


def _threads(user_api: str) -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == user_api]


def test_serial_blas_holds_blas_to_one_thread_for_the_block_only() -> None:
    before_blas, before_openmp = _threads("blas"), _threads("openmp")
    assert before_blas  # numpy's BLAS is loaded
    with serial_blas():
        assert set(_threads("blas")) == {1}
        assert _threads("openmp") == before_openmp  # only BLAS
    assert _threads("blas") == before_blas
    with serial_blas(openmp=True):
        assert set(_threads("blas") + _threads("openmp")) == {1}
    assert (_threads("blas"), _threads("openmp")) == (before_blas, before_openmp)


def _in_new_thread(function: Callable[[], T]) -> T:
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(function()))
    thread.start()
    thread.join()
    return result[0]


def test_torch_threads_sets_the_count_for_the_block_and_restores_it_when_nested() -> None:
    import torch

    before = torch.get_num_threads()
    with torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
        with torch_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="inside"), torch_threads(1):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_torch_threads_of_overlapping_blocks_in_two_threads_leave_the_count_of_before() -> None:
    """A thread started inside another's block inherits its count; whichever block closes last, the
    threads started afterwards get the count from before the first block (a plain save-and-restore
    left them the inner 1)."""
    import torch

    before = torch.get_num_threads()
    outer_open, inner_open, outer_closed = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def inner() -> None:
        outer_open.wait()
        with torch_threads(1):
            seen["inner, at its start"] = torch.get_num_threads()
            inner_open.set()
            outer_closed.wait()  # the outer block closes first

    def outer() -> None:
        with torch_threads(1):
            outer_open.set()
            inner_open.wait()
        seen["outer, after its block"] = torch.get_num_threads()
        outer_closed.set()

    threads = [threading.Thread(target=inner), threading.Thread(target=outer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert seen == {"inner, at its start": 1, "outer, after its block": before}
    assert _in_new_thread(torch.get_num_threads) == before
    assert torch.get_num_threads() == before
