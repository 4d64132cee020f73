"""Hostile input to the lab and the grid: grid files and records validated when read (class 9), memory
bounded by the product of a run's sizes (class 9), concurrent writers of one directory (class 10)
and temporary files of other programs left alone (class 11). Sweeps are real and tiny."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_runner import assert_one_line_error, cli, run_cli
from tiny_models import MakeCheckpoint

from specbound.core.limits import LIMITS
from specbound.io.files import OUTPUT_LOCK_FILE as LOCK_FILE
from specbound.io.files import DirectoryLock
from specbound_lab.claims import claim_path
from specbound_lab.records import RECORD_FILE, RUNS_DIR, read_record, read_runs
from specbound_lab.sweep import run_sweep
from specbound_lab.tasks import ThresholdTask
from specbound_lab.train import LabError, RunSpec, TrainSettings

#: One tiny run: a few seconds of training on one core.
TINY_GRID = {
    "layers": [1],
    "hidden": [8],
    "heads": [1],
    "n_train": [16],
    "label_noise": [0.0],
    "seeds": [0],
    "settings": {"steps": 100, "save_every": 50, "test_samples": 50},
}
TINY_SPEC = RunSpec(
    layers=1, hidden=8, heads=1, n_train=16, settings=TrainSettings(steps=20, save_every=10, test_samples=50)
)


def _grid_file(tmp_path: Path, text: str, name: str = "grid.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- class 9: grids validated at load time ----------------------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"layers": [1e999]}', ["'layers'", "finite"]),
        ('{"n_train": [NaN]}', ["'n_train'", "finite"]),
        ('{"label_noise": [-Infinity]}', ["'label_noise'", "finite"]),
        ('{"task": {"positions": [0.5, 3]}}', ["'positions'", "integers"]),
        ('{"task": {"positions": 3}}', ["'positions'", "list of integers"]),
        ('{"task": {"vocab_size": 8.5}}', ["'vocab_size'", "integers"]),
        ('{"task": {"length": 1e999}}', ["'length'", "finite"]),
        ('{"settings": {"steps": 1e999}}', ["'steps'", "finite"]),
        ('{"settings": {"learning_rate": "fast"}}', ["'learning_rate'", "number"]),
        ('{"settings": {"test_samples": 2.5}}', ["'test_samples'", "integers"]),
        ('{"layers": [true]}', ["'layers'", "number"]),
        ("[" * 100_000 + "]" * 100_000, ["nested too deeply"]),
        ('{"layers": [1], "layers": {"x": 1}}', ["'layers'", "number"]),
        ('{"\\u001b[31m": 1}', ["unknown grid entries", "\\x1b[31m"]),
    ],
    ids=[
        "inf axis",
        "nan axis",
        "-inf noise",
        "float positions",
        "positions not a list",
        "float vocab",
        "inf length",
        "inf steps",
        "string rate",
        "float samples",
        "bool axis",
        "deep nesting",
        "object axis",
        "escape in a key",
    ],
)
def test_hostile_grid_files_get_one_line_before_any_work(tmp_path: Path, text: str, words: list[str]) -> None:
    grid = _grid_file(tmp_path, text)
    out = tmp_path / "lab"
    line = assert_one_line_error(cli("lab", "sweep", "--grid", str(grid), "--out", str(out)), *words)
    assert "internal error" not in line and "\x1b" not in line
    assert not out.exists()


def test_a_grid_file_that_is_a_fifo_a_device_or_too_large(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert_one_line_error(
        run_cli("lab", "sweep", "--grid", str(fifo), "--out", str(tmp_path / "a"), timeout=60), "named pipe"
    )
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    assert_one_line_error(
        run_cli("lab", "sweep", "--grid", str(zero), "--out", str(tmp_path / "b"), timeout=60), "device"
    )
    big = _grid_file(tmp_path, '{"layers": [1], "x": "' + "y" * LIMITS.max_grid_bytes + '"}', "big.json")
    assert_one_line_error(cli("lab", "sweep", "--grid", str(big), "--out", str(tmp_path / "c")), "larger than")


def test_limits_each_in_range_are_refused_together_by_their_product(tmp_path: Path) -> None:
    """Sequence length 512 and 200,000 test samples are each allowed; together they need gigabytes."""
    grid = _grid_file(
        tmp_path,
        json.dumps(
            {**TINY_GRID, "task": {"length": 512, "positions": [0, 5, 9]}, "settings": {"test_samples": 200_000}}
        ),
    )
    started = time.perf_counter()
    line = assert_one_line_error(cli("lab", "sweep", "--grid", str(grid), "--out", str(tmp_path / "lab")), "GiB")
    assert "sequence length 512" in line and "200000 test samples" in line
    assert time.perf_counter() - started < 10  # refused from the sizes, nothing sampled
    with pytest.raises(LabError, match="would need about"):
        RunSpec(
            layers=2,
            hidden=64,
            heads=16,
            n_train=1000,
            task=ThresholdTask(length=512),
            settings=TrainSettings(batch_size=4096),
        )
    assert RunSpec(layers=2, hidden=16, heads=2, n_train=1000, task=ThresholdTask(length=128)).layers == 2


# --- class 9: records validated at load time -------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lab directory with one finished tiny run (trained once for the module)."""
    out = tmp_path_factory.mktemp("lab") / "lab"
    run_sweep([TINY_SPEC], out)
    return out


def _tampered(finished_lab: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    import shutil

    out = tmp_path / "lab"
    shutil.copytree(finished_lab, out)
    path = out / RUNS_DIR / TINY_SPEC.name / RECORD_FILE
    record = json.loads(path.read_text())
    edit(record)
    path.write_text(json.dumps(record))
    return out


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.update(params=float("inf")),
        lambda r: r.update(params=1.5),
        lambda r: [s.update(p_opt=[]) for s in r["steps"]],
        lambda r: r["steps"][-1].update(p_opt=[float("nan")] * len(r["steps"][-1]["p_opt"])),
        lambda r: r["steps"][-1].update(p_opt=[7.0] * len(r["steps"][-1]["p_opt"])),
        lambda r: r["steps"][-1].update(test_error=float("inf")),
        lambda r: r["steps"][-1].update(test_error=1.5),
        lambda r: r.update(steps=[]),
        lambda r: r.update(steps=list(reversed(r["steps"]))),
        lambda r: r["spec"].update(layers=1.7),
        lambda r: r["spec"]["task"].update(positions=[0.5]),
        lambda r: r["steps"][0].update(log10_alpha=[]),
        lambda r: r.update(matrices=[]),
        lambda r: r.update(seconds=float("inf")),
    ],
    ids=[
        "inf params",
        "float params",
        "empty p*",
        "nan p*",
        "p* out of range",
        "inf error",
        "error above one",
        "no steps",
        "steps out of order",
        "float layers",
        "float positions",
        "alpha missing",
        "no matrices",
        "inf seconds",
    ],
)
def test_hostile_records_are_not_finished_runs(
    finished_lab: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], object]
) -> None:
    out = _tampered(finished_lab, tmp_path, edit)
    assert read_record(out / RUNS_DIR / TINY_SPEC.name / RECORD_FILE) is None
    assert read_runs(out) == ()
    result = cli("lab", "show", str(out), "--runs")
    assert result.returncode == 0, result.stderr
    assert "0 finished run(s)" in result.stdout and "internal error" not in result.stderr


def test_the_untampered_record_reads_back(finished_lab: Path) -> None:
    (run,) = read_runs(finished_lab)
    assert run.name == TINY_SPEC.name and len(run.final.p_opt) == len(run.matrices) > 0


def test_a_record_that_is_a_fifo_or_a_device_is_skipped_without_hanging(finished_lab: Path, tmp_path: Path) -> None:
    import shutil

    out = tmp_path / "lab"
    shutil.copytree(finished_lab, out)
    record = out / RUNS_DIR / TINY_SPEC.name / RECORD_FILE
    record.unlink()
    record.symlink_to("/dev/zero")
    other = out / RUNS_DIR / "other-run"
    other.mkdir()
    os.mkfifo(other / RECORD_FILE)
    result = run_cli("lab", "show", str(out), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "0 finished run(s)" in result.stdout


# --- class 10: concurrent writers ---------------------------------------------------------------------------


def _sweep(grid: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "specbound.cli", "lab", "sweep", "--grid", str(grid), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_sweeps_into_one_directory_train_each_run_once_and_lose_nothing(tmp_path: Path) -> None:
    grid = _grid_file(tmp_path, json.dumps(TINY_GRID))
    out = tmp_path / "lab"
    first, second = _sweep(grid, out), _sweep(grid, out)
    outputs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outputs
    texts = [stdout for stdout, _ in outputs]
    assert sum(": done in" in t for t in texts) == 1, texts  # trained once
    assert sum("skipped" in t for t in texts) == 1, texts  # the other reused its record
    (run,) = read_runs(out)
    for step in run.steps:  # every checkpoint of the record is still there
        assert (out / RUNS_DIR / run.name / step.checkpoint / "model.safetensors").is_file()
    assert "1 finished run(s)" in cli("lab", "show", str(out)).stdout


def test_a_sweep_waits_for_a_run_claimed_by_another_writer_and_deletes_nothing_meanwhile(tmp_path: Path) -> None:
    grid = _grid_file(tmp_path, json.dumps(TINY_GRID))
    out = tmp_path / "lab"
    spec_name = "lab-L1-N8-H1-n16-q0-s0-t100"
    run_dir = out / RUNS_DIR / spec_name
    run_dir.mkdir(parents=True)
    in_progress = run_dir / "being-written"
    in_progress.write_text("another writer's checkpoint")
    claim = DirectoryLock(claim_path(out, spec_name), f"run {spec_name}").acquire(wait=False)
    try:
        sweep = _sweep(grid, out)
        waited = ""
        deadline = time.monotonic() + 120
        while "waiting" not in waited and time.monotonic() < deadline:
            assert sweep.stdout is not None  # piped
            waited += sweep.stdout.readline()
        assert "being trained by another writer" in waited, waited
        time.sleep(1.5)  # it keeps waiting: the run in progress is untouched
        assert in_progress.is_file() and sweep.poll() is None
    finally:
        claim.release()
    stdout, stderr = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, stderr
    assert ": done in" in stdout  # no record was left by the other writer: trained from scratch
    assert not in_progress.exists()


def test_a_grid_run_into_a_directory_being_written_stops_with_one_line(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    out = tmp_path / "study"
    out.mkdir()
    lock = DirectoryLock(out / LOCK_FILE, "the output directory study").acquire(wait=False)
    try:
        result = run_cli("grid", "--models", str(make_checkpoint()), "--out", str(out))
    finally:
        lock.release()
    assert_one_line_error(result, "study", "is being written by process", str(os.getpid()))
    assert not (out / "models.csv").exists()
    assert cli("grid", "--models", str(make_checkpoint(name="again")), "--out", str(out)).returncode == 0


# --- class 11: temporary files of other programs -------------------------------------------------------------


def test_grid_removes_only_its_own_temporary_files(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    out = tmp_path / "study"
    (out / "models").mkdir(parents=True)
    old = time.time() - LIMITS.stale_temp_seconds - 60

    def temp(path: Path, *, stale: bool = True) -> Path:
        path.write_text("x")
        if stale:
            os.utime(path, (old, old))
        return path

    foreign = [
        temp(out / ".notes.tmp"),
        temp(out / ".vimrc.swp.tmp"),
        temp(out / ".thesis.tex.4Fh2.tmp"),
        temp(out / "models" / ".draft.txt.a1.tmp"),
    ]
    ours = [
        temp(out / ".specbound-tmp.models.csv.k2j3.tmp"),
        temp(out / ".models.csv.abcd1234.tmp"),  # left by a version before the prefix, named after its table
        temp(out / "models" / ".specbound-tmp.m.json.zz.tmp"),
    ]
    young = temp(out / ".specbound-tmp.curves.csv.new.tmp", stale=False)
    assert cli("grid", "--models", str(make_checkpoint()), "--out", str(out)).returncode == 0
    assert all(p.exists() for p in foreign)
    assert not any(p.exists() for p in ours)
    assert young.exists()


def test_atomic_writes_use_the_package_prefix(tmp_path: Path) -> None:
    from specbound.io.files import atomic_write

    target = tmp_path / ("n" * 250)  # a long name still leaves room for the prefix
    with atomic_write(target) as f:
        (temporary,) = [p for p in tmp_path.iterdir() if p != target]
        assert temporary.name.startswith(".specbound-tmp.") and temporary.name.endswith(".tmp")
        f.write(b"x")
    assert target.read_bytes() == b"x" and list(tmp_path.iterdir()) == [target]
