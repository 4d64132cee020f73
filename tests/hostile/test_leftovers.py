"""Class 6, leftovers: temporary files of killed writers are cleaned, and loading a hostile pickle
prints our one line, never torch's warnings or its advice to pass ``weights_only=False``."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import assert_one_line_error, cli, run_cli
from tiny_models import MakeCheckpoint

from specbound.core.limits import LIMITS
from specbound.io.cache import ProfileCache
from specbound.io.files import remove_stale_temps
from specbound.io.loading import load_profile

OLD = time.time() - LIMITS.stale_temp_seconds - 60


def _temp(directory: Path, name: str, *, old: bool) -> Path:
    path = directory / name
    path.write_bytes(b"half of a file")
    if old:
        os.utime(path, (OLD, OLD))
    return path


def test_the_cache_removes_stale_temporary_files_and_keeps_young_ones(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    cache.directory.mkdir()
    stale = [_temp(cache.directory, f".{i}.npz.abc{i}.tmp", old=True) for i in range(3)]
    young = _temp(cache.directory, ".x.npz.young.tmp", old=False)
    unrelated = _temp(cache.directory, "notes.tmp", old=True)  # not a name atomic_write makes
    load_profile(str(make_checkpoint()), cache=cache)
    assert not any(p.exists() for p in stale)
    assert young.exists() and unrelated.exists()


def test_a_grid_run_removes_stale_temporary_files(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    from specbound.api.batch import run_grid

    out = tmp_path / "study"
    (out / "models").mkdir(parents=True)
    stale = [
        _temp(out, ".models.csv.1.tmp", old=True),
        _temp(out, ".growth_L.html.2.tmp", old=True),
        _temp(out / "models", ".m.json.3.tmp", old=True),
    ]
    run_grid([str(make_checkpoint())], out)
    assert not any(p.exists() for p in stale)
    assert not list(out.rglob(".*.tmp"))


def test_a_writer_killed_mid_write_leaves_a_file_the_next_writer_removes(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "profiles"
    cache_dir.mkdir()
    script = (
        "import sys, time; from pathlib import Path; from specbound.io.files import atomic_write\n"
        "with atomic_write(Path(sys.argv[1]) / 'entry.npz') as f:\n"
        "    f.write(b'x' * 4096); f.flush(); print('writing', flush=True); time.sleep(60)\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script, str(cache_dir)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None  # piped
    assert writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    leftovers = list(cache_dir.glob(".*.tmp"))
    assert len(leftovers) == 1 and not (cache_dir / "entry.npz").exists()
    os.utime(leftovers[0], (OLD, OLD))
    load_profile(str(make_checkpoint()), cache=ProfileCache(cache_dir))
    assert not list(cache_dir.glob(".*.tmp"))


def test_remove_stale_temps_on_a_missing_directory(tmp_path: Path) -> None:
    assert remove_stale_temps(tmp_path / "absent") == 0


# --- pickles ----------------------------------------------------------------------------------------


class _RunsCode:
    """Unpickling this would run a shell command that creates a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], int], tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


class _Custom:
    pass


def _raw_pickle(path: Path, marker: Path) -> None:
    with open(path, "wb") as f:
        pickle.dump({"encoder.layer.0.attention.self.query.weight": _RunsCode(marker)}, f, protocol=4)


def _zip_with_code(path: Path, marker: Path) -> None:
    import torch

    torch.save({"encoder.layer.0.attention.self.query.weight": _RunsCode(marker)}, path)


def _legacy_with_object(path: Path, marker: Path) -> None:
    import torch

    torch.save({"encoder.layer.0.attention.self.query.weight": _Custom()}, path, _use_new_zipfile_serialization=False)


def _zip_with_object(path: Path, marker: Path) -> None:
    import torch

    torch.save({"x": _Custom(), "encoder.layer.0.attention.self.query.weight": torch.zeros(2)}, path)


def test_a_raw_pickle_in_a_real_process_prints_one_line_only(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    directory = make_checkpoint(safe=False)
    marker = tmp_path / "code-ran"
    _raw_pickle(directory / "pytorch_model.bin", marker)
    result = run_cli("analyze", str(directory), "--no-cache")
    assert_one_line_error(result, "pytorch_model.bin", "objects other than tensors", "never loaded")
    assert "weights_only" not in result.stderr and "Warning" not in result.stderr
    assert not marker.exists()


@pytest.mark.parametrize("write", [_raw_pickle, _zip_with_code, _legacy_with_object, _zip_with_object])
def test_a_hostile_pickle_is_one_line_without_torch_warnings_or_advice(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, write: Callable[[Path, Path], None]
) -> None:
    directory = make_checkpoint(safe=False)
    marker = tmp_path / "code-ran"
    write(directory / "pytorch_model.bin", marker)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cli("analyze", str(directory), "--no-cache")
    assert caught == []
    line = assert_one_line_error(result, "pytorch_model.bin")
    assert "weights_only" not in result.stderr
    assert "objects other than tensors" in line or "not a weights-only PyTorch file" in line
    assert not marker.exists()


def test_a_state_dict_holding_a_non_tensor_where_a_weight_belongs(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    import torch

    directory = make_checkpoint(safe=False)
    state = torch.load(directory / "pytorch_model.bin", weights_only=True)
    state["encoder.layer.0.intermediate.dense.weight"] = "not a tensor"
    state["encoder.layer.1.output.dense.weight"] = torch.zeros(32, 48, dtype=torch.int64)
    torch.save(state, directory / "pytorch_model.bin")
    assert_one_line_error(
        cli("analyze", str(directory), "--no-cache"), "'encoder.layer.0.intermediate.dense.weight' has shape ()"
    )
