"""The thread counts of the native libraries: changed for a block only, and restored after it."""

from __future__ import annotations

from threadpoolctl import threadpool_info

from specbound.threads import serial_blas


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
