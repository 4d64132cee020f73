"""The tensor readers (``specbound.io.checkpoints.tensors``): what a safetensors header declares, each
format's values as float64 (bfloat16 widened exactly, without torch), memory maps of stored values, a
sharded checkpoint opened lazily, and the matrices stored fused inside a larger tensor."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

from specbound.core.errors import UnsupportedModelError
from specbound.io.checkpoints.tensors import (
    PickleFile,
    SafetensorsFile,
    SlicedTensors,
    StateDictTensors,
    TensorInfo,
    WeightFiles,
    safetensors_header,
    widen,
)
from specbound.io.families.base import TensorSlice

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4)).astype(np.float32)
B = RNG.normal(size=(5,)).astype(np.float16)
STEPS = np.arange(6, dtype=np.int64)


@pytest.fixture
def safetensors_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.safetensors"
    save_numpy({"a": A, "b": B, "steps": STEPS}, str(path))
    return path


def test_the_header_declares_dtype_shape_and_where_each_tensor_starts(safetensors_file: Path) -> None:
    header = safetensors_header(safetensors_file)
    assert {name: (i.dtype, i.shape) for name, i in header.items()} == {
        "a": ("F32", (3, 4)),
        "b": ("F16", (5,)),
        "steps": ("I64", (6,)),
    }
    # the data offsets tile the data block: each tensor starts where the one before it ends
    spans = sorted((i.offset, i.offset + int(np.prod(i.shape)) * {"F32": 4, "F16": 2, "I64": 8}[i.dtype])
                   for i in header.values())  # fmt: skip
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(spans))
    assert header["a"].is_float and header["b"].is_float and not header["steps"].is_float


def test_a_safetensors_tensor_reads_as_float64_and_maps_as_stored(safetensors_file: Path) -> None:
    file = SafetensorsFile(safetensors_file)
    a = file.get("a")
    assert a.dtype == np.float64 and np.array_equal(a, A.astype(np.float64))  # float32 widens exactly
    assert np.array_equal(file.get("b"), B.astype(np.float64))
    found = file.mapped("a")
    assert found is not None
    mapped, dtype = found
    assert dtype == "F32" and mapped.dtype == np.float32 and np.array_equal(mapped, A)
    assert file.mapped("steps") is None  # an integer tensor has no float view to map


def test_bfloat16_widens_exactly_without_torch(tmp_path: Path) -> None:
    values = torch.tensor([[1.0, -2.5, 3.140625], [1e-3, 65280.0, -0.0078125]], dtype=torch.bfloat16)
    path = tmp_path / "bf16.safetensors"
    save_torch({"w": values}, str(path))
    exact = values.to(torch.float64).numpy()
    file = SafetensorsFile(path)
    assert file.info("w") == TensorInfo("BF16", (2, 3), file.info("w").offset)
    assert np.array_equal(file.get("w"), exact)
    found = file.mapped("w")
    assert found is not None
    bits, dtype = found
    assert dtype == "BF16" and np.array_equal(widen(np.asarray(bits), dtype), exact)


def test_a_pickle_and_a_model_in_memory_read_alike(tmp_path: Path) -> None:
    state = {"w": torch.tensor(A), "h": torch.tensor(B)}
    path = tmp_path / "pytorch_model.bin"
    torch.save(state, path)
    pickled, memory = PickleFile(path), StateDictTensors(state)
    for source in (pickled, memory):
        assert sorted(source.names()) == ["h", "w"]
        assert source.info("w").shape == (3, 4)
        assert np.array_equal(source.get("w"), A.astype(np.float64))
        assert np.array_equal(source.get("h"), B.astype(np.float64))
    assert pickled.mapped("w") is None  # a pickle is not read through a memory map


def test_shards_open_when_first_asked_for(tmp_path: Path) -> None:
    first, second = tmp_path / "model-1.safetensors", tmp_path / "model-2.safetensors"
    save_numpy({"a": A}, str(first))
    save_numpy({"b": B}, str(second))

    class Arrival:
        def __init__(self) -> None:
            self.waited: list[str] = []

        def wait(self, filename: str) -> None:
            self.waited.append(filename)

    arrival = Arrival()
    files = WeightFiles([first, second], weight_map={"a": first, "b": second}, arrival=arrival)
    assert files.names() == ["a", "b"] and files.shard_of("b") == second
    assert arrival.waited == []  # nothing opened yet
    assert np.array_equal(files.get("b"), B.astype(np.float64))
    assert arrival.waited == ["model-2.safetensors"]
    files.info("a")
    assert arrival.waited == ["model-2.safetensors", "model-1.safetensors"]


def test_a_matrix_stored_fused_reads_as_its_own_tensor(tmp_path: Path) -> None:
    fused = RNG.normal(size=(2, 6, 4)).astype(np.float32)  # two experts' gate and up projections, 3 rows each
    path = tmp_path / "experts.safetensors"
    save_numpy({"gate_up": fused}, str(path))
    slices = {
        "e1.up": TensorSlice("gate_up", 1, (3, 6), (2, 6, 4)),
        "e0.gate": TensorSlice("gate_up", 0, (0, 3), (2, 6, 4)),
    }
    for source in (SafetensorsFile(path), StateDictTensors({"gate_up": torch.tensor(fused)})):
        sliced = SlicedTensors(source, slices)
        assert sliced.info("e1.up").shape == (3, 4)
        assert np.array_equal(sliced.get("e1.up"), fused[1, 3:6].astype(np.float64))
        assert np.array_equal(sliced.get("e0.gate"), fused[0, 0:3].astype(np.float64))
    wrong = SlicedTensors(SafetensorsFile(path), {"x": TensorSlice("gate_up", 0, None, (4, 6, 4))})
    with pytest.raises(UnsupportedModelError, match=r"config\.json implies"):
        wrong.info("x")
