"""``lab sweep --workers`` and ``--dask``: the runs trained in parallel give the tables of a serial sweep.

Wall times aside (they are measured, not computed), ``runs.csv`` and ``correlations.csv`` of a small
sweep (four short runs of the smoke task) trained by two local worker processes, and by a real
``dask.distributed.LocalCluster`` of two workers on the loopback interface, equal those of the same
sweep trained serially; and a Dask worker given all four runs keeps the evaluation graphs it builds
(one per architecture) across them, with the same tables.
"""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pytest

from specbound.cli import main

if TYPE_CHECKING:
    from distributed import Client

#: Four runs of 30 steps: two depths, two seeds.
SMALL = ("--layers", "1", "2", "--hidden", "16", "--n-train", "64", "--label-noise", "0", "--seeds", "0", "1",
         "--steps", "30", "--save-every", "15")  # fmt: skip


def _sweep(out: Path, *options: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["lab", "sweep", "--preset", "smoke", *SMALL, "--out", str(out), *options]) == 0
    return printed.getvalue()


def _tables(directory: Path) -> tuple[pd.DataFrame, str]:
    runs = pd.read_csv(directory / "runs.csv")
    runs = runs[[c for c in runs.columns if "seconds" not in c]]
    return runs, (directory / "correlations.csv").read_text()


def _graphs_on_every_worker() -> None:
    """On a Dask worker: compiling pays for every run, and "compiling" is instant (the graph's forward is
    the eager module's, so its records are the eager ones bit for bit): what is tested is the cache."""
    import torch

    from specbound_lab import compiled

    compiled.COMPILE_SECONDS = 0.0
    compiled.MIN_COMPILED_EXAMPLES = 0

    def no_compile(module: Any, **options: Any) -> Any:
        return module

    torch.compile = no_compile  # type: ignore[assignment]  # the stand-in keeps the one call the lab makes


def _graphs_held() -> tuple[int, int]:
    from specbound_lab import compiled

    return compiled.compilations(), compiled.cached_graphs()


def _wait_for_workers(client: Client, count: int, timeout_s: float = 120.0) -> None:
    """Until the scheduler knows exactly ``count`` workers (a scaled-down worker leaves in the background)."""
    deadline = time.monotonic() + timeout_s
    while len(client.scheduler_info()["workers"]) != count:
        assert time.monotonic() < deadline, f"the cluster still has {len(client.scheduler_info()['workers'])} workers"
        time.sleep(0.1)


@pytest.mark.slow
def test_workers_and_a_cluster_train_the_runs_of_a_serial_sweep(tmp_path: Path, own_main_module: None) -> None:
    from distributed import Client, LocalCluster

    _sweep(tmp_path / "serial")
    serial_runs, serial_correlations = _tables(tmp_path / "serial")
    printed = _sweep(tmp_path / "local", "--workers", "2")
    assert "runs to train in 2 worker processes" in printed
    two = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
    with two as cluster, Client(cluster) as client:
        _sweep(tmp_path / "dask", "--dask", cluster.scheduler_address)
        # one worker given all four runs of two architectures keeps its graphs: built two pairs, reused (the
        # cluster scaled down to one rather than a second cluster started; the sweep above compiled nothing)
        assert list(client.run(_graphs_held).values()) == [(0, 0), (0, 0)]
        cluster.scale(1)
        _wait_for_workers(client, 1)
        client.run(_graphs_on_every_worker)
        _sweep(tmp_path / "graphs", "--dask", cluster.scheduler_address)
        # (graphs compiled, graphs held): per architecture the evaluations' graph and the searches' summary graph
        assert list(client.run(_graphs_held).values()) == [(4, 4)]
    for kind in ("local", "dask", "graphs"):
        runs, correlations = _tables(tmp_path / kind)
        pd.testing.assert_frame_equal(runs, serial_runs)
        assert correlations == serial_correlations
    again = _sweep(tmp_path / "local", "--workers", "2")  # resumes like a serial sweep: nothing to train
    assert "0 runs to train" in again
    assert again.count("skipped, already done") == serial_runs["run"].nunique() == 4
