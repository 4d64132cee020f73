"""Large checkpoints, at a small size: streaming shard by shard, resuming per layer, the backends.

Every checkpoint here is a real one, written by transformers' ``save_pretrained`` (or ``torch.save``
for the PyTorch shards) and split into several shards; the references are numpy's dense results
on matrices formed from the state dict.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import assert_one_line_error, run_cli
from local_hub import LocalHub
from tiny_models import MakeCheckpoint, save_tiny

from specbound import compute_profile, load_profile
from specbound.core.architecture import Mlp, ModelShape
from specbound.core.backend import Backend, BackendError, BackendSpec, get_backend
from specbound.core.engine import LayerSpectra
from specbound.core.errors import SpecboundError
from specbound.core.factored import FactoredHeads, head_spectra
from specbound.core.limits import LIMITS, check_encoder_shape, layer_peak_bytes
from specbound.core.matrices import LayerSource, attention_heads, layer_factors
from specbound.core.progress import ProgressEvent, format_eta
from specbound.io.cache import ProfileCache
from specbound.io.checkpoints import StreamedLayer, open_checkpoint, read_config
from specbound.io.checkpoints.tensors import WeightFiles
from specbound.io.options import ComputeOptions

LAYERS = 4


def write_llama(directory: Path, *, dtype: str = "bfloat16", shard: str = "24KB", seed: int = 0) -> Path:
    """A 4-layer Llama-shaped decoder (grouped-query, gated MLP), bf16, in several safetensors shards."""
    save_tiny(
        directory, "llama", layers=LAYERS, hidden=48, heads=4, ffn=80, num_key_value_heads=2, vocab_size=32,
        seed=seed, dtype=dtype, max_shard_size=shard,
    )  # fmt: skip
    assert len(list(directory.glob("model-*.safetensors"))) >= 3
    return directory


def write_sharded_bin(directory: Path, shards: int = 4) -> Path:
    """The same kind of model as PyTorch pickles, ``shards`` files and their index (transformers 4's layout)."""
    import torch

    write_llama(directory / "st", dtype="float32")
    from safetensors.torch import load_file

    state: dict[str, Any] = {}
    for path in sorted((directory / "st").glob("model-*.safetensors")):
        state.update(load_file(path))
    names = sorted(state, key=lambda n: (int(n.split(".")[1]) if n.startswith("layers.") else -1, n))
    weight_map = {}
    out = directory / "bin"
    out.mkdir()
    (out / "config.json").write_text((directory / "st" / "config.json").read_text())
    for k, part in enumerate(np.array_split(np.arange(len(names)), shards), start=1):
        file = f"pytorch_model-{k:05d}-of-{shards:05d}.bin"
        torch.save({names[i]: state[names[i]] for i in part}, out / file)
        weight_map.update(dict.fromkeys((names[i] for i in part), file))
    (out / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return out


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_llama(tmp_path_factory.mktemp("llama") / "llama")


def dense_matrices(directory: Path) -> list[np.ndarray]:
    """Every proxy matrix of a checkpoint formed densely from its weights, in profile order."""
    checkpoint = open_checkpoint(directory)
    shape = checkpoint.shape
    out = []
    for index in range(shape.num_layers):
        f = layer_factors(checkpoint.layer(index), shape)
        out += [*f.qk(), *f.v(), *f.mlp.values()]
    return out


# --- the backends ------------------------------------------------------------------------------------


def test_torch_on_the_cpu_equals_numpy_to_1e_12_of_sigma_1(llama: Path) -> None:
    numpy_profile = load_profile(str(llama), use_cache=False)
    torch_profile = load_profile(str(llama), ComputeOptions(BackendSpec("torch", "cpu")), use_cache=False)
    assert numpy_profile.shape.num_matrices == torch_profile.shape.num_matrices == LAYERS * (2 * 4 + 3)
    for i in range(numpy_profile.shape.num_matrices):
        sigma_1 = numpy_profile.singular_values[i, 0]
        np.testing.assert_allclose(
            torch_profile.singular_values[i], numpy_profile.singular_values[i], atol=1e-12 * sigma_1
        )
    np.testing.assert_allclose(torch_profile.norm_21, numpy_profile.norm_21, rtol=1e-12)
    np.testing.assert_allclose(torch_profile.norm_11, numpy_profile.norm_11, rtol=1e-12)
    # and both are the dense SVD of the matrices themselves
    for i, matrix in enumerate(dense_matrices(llama)):
        dense = np.linalg.svd(matrix, compute_uv=False)
        np.testing.assert_allclose(
            numpy_profile.singular_values_of(i), dense, atol=1e-9 * dense[0], err_msg=f"matrix {i}"
        )


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="needs a CUDA device (benchmarks/bench_gpu.py on one)"
)
def test_cuda_equals_the_cpu_to_1e_12_of_sigma_1(llama: Path) -> None:
    cpu = load_profile(str(llama), use_cache=False)
    cuda = load_profile(str(llama), ComputeOptions(BackendSpec("torch", "cuda")), use_cache=False)
    sigma_1 = cpu.singular_values[:, :1]
    assert np.all(np.abs(cuda.singular_values - cpu.singular_values) <= 1e-12 * sigma_1)
    np.testing.assert_allclose(cuda.norm_21, cpu.norm_21, rtol=1e-12)
    np.testing.assert_allclose(cuda.norm_11, cpu.norm_11, rtol=1e-12)


def test_large_eigen_solves_of_the_numpy_backend_go_through_torchs_lapack(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import specbound.core.backend as backend

    rng = np.random.default_rng(3)
    factor = rng.standard_normal((backend.LARGE_EIGEN_ORDER, backend.LARGE_EIGEN_ORDER + 64))
    gram = factor @ factor.T
    reference = np.linalg.eigvalsh(gram)
    via_torch = backend.large_eigvalsh(gram)
    assert via_torch is not None and not np.array_equal(via_torch, reference)  # another LAPACK's bits
    assert np.max(np.abs(via_torch - reference)) <= 1e-13 * reference[-1]
    np.testing.assert_array_equal(get_backend().eigvalsh(gram), via_torch)
    small = gram[:1024, :1024]  # below the order: numpy's own, bit for bit (every BERT-family Gram matrix)
    np.testing.assert_array_equal(get_backend().eigvalsh(small), np.linalg.eigvalsh(small))
    monkeypatch.setitem(sys.modules, "torch", None)  # torch not installed: numpy's own, and the spec says so
    assert BackendSpec().large_eigen == "numpy"
    np.testing.assert_array_equal(get_backend(BackendSpec()).eigvalsh(gram), reference)
    with pytest.raises(BackendError, match="cannot be imported"):
        backend.large_eigvalsh(gram)


def test_a_large_qr_batch_is_factored_one_matrix_at_a_time_with_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    import specbound.core.backend as backend

    rng = np.random.default_rng(5)
    heads = rng.standard_normal((6, 20, 300)).transpose(0, 2, 1)  # (H, N, d) views, as the query factors
    batched = get_backend().qr_r(heads)
    monkeypatch.setattr(backend, "QR_BATCH_BYTES", 0)
    np.testing.assert_array_equal(get_backend().qr_r(heads), batched)
    assert batched.shape == (6, 20, 20)


def test_backend_choices_are_checked() -> None:
    with pytest.raises(BackendError, match="CPU only"):
        BackendSpec("numpy", "cuda")
    with pytest.raises(BackendError, match="unknown backend"):
        BackendSpec("jax")  # type: ignore[arg-type]
    if not __import__("torch").cuda.is_available():
        with pytest.raises(BackendError, match="no CUDA device"):
            get_backend("torch", "cuda")


def test_cli_backend_options(llama: Path) -> None:
    numpy_json = json.loads(run_cli("analyze", str(llama), "--json", "--no-cache").stdout)
    torch_run = run_cli("analyze", str(llama), "--json", "--no-cache", "--backend", "torch", "--device", "cpu")
    assert torch_run.returncode == 0, torch_run.stderr
    torch_json = json.loads(torch_run.stdout)
    for ours, theirs in zip(numpy_json["matrices"], torch_json["matrices"], strict=True):
        assert theirs["spectral_norm"] == pytest.approx(ours["spectral_norm"], rel=1e-12)
    with_11 = json.loads(run_cli("analyze", str(llama), "--json", "--no-cache", "--norm-11").stdout)
    assert with_11 == numpy_json  # every product of this model fits whole: its (1,1) norms were all there
    assert_one_line_error(run_cli("analyze", str(llama), "--backend", "numpy", "--device", "cuda"), "CPU only")


# --- the entrywise norms from the factors ---------------------------------------------------------------


@pytest.mark.parametrize("shared", [False, True], ids=["one factor per head", "grouped-query"])
def test_blocked_norms_of_factored_products_equal_dense(monkeypatch: pytest.MonkeyPatch, shared: bool) -> None:
    import specbound.core.factored as factored

    rng = np.random.default_rng(7)
    n, d, heads = 96, 8, 4
    left = rng.standard_normal((heads, n, d))
    right = rng.standard_normal((2 if shared else heads, d, n))
    groups = np.array([0, 0, 1, 1]) if shared else np.arange(heads)
    products = FactoredHeads(left, right, np.arange(heads), groups)
    whole = head_spectra(products)
    # a buffer of 10 columns: the (1,1) norm block by block, the (2,1) norm from R B
    monkeypatch.setattr(factored, "PRODUCT_BLOCK_BYTES", 8 * n * 10)
    blocked = head_spectra(products, large_norm_11=True)
    by_default = head_spectra(products)
    assert np.isnan(by_default.norm_11).all()  # opt-in for products too large to form whole
    np.testing.assert_array_equal(by_default.norm_21, blocked.norm_21)
    for h in range(heads):
        dense = left[h] @ right[groups[h]]
        assert blocked.norm_11[h] == pytest.approx(np.abs(dense).sum(), rel=1e-13)
        assert blocked.norm_21[h] == pytest.approx(np.linalg.norm(dense, axis=0).sum(), rel=1e-13)
        assert whole.norm_21[h] == pytest.approx(blocked.norm_21[h], rel=1e-13)
    np.testing.assert_array_equal(whole.singular_values, blocked.singular_values)


def test_the_large_norm_11_is_opt_in_from_the_command_line_to_the_cache(
    llama: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With every QK and V product of the fixture over the buffer: null in the JSON by default, the
    dense value on request; a cached profile without it is computed again when it is asked for."""
    import specbound
    import specbound.core.factored as factored
    from specbound.core.profile import validate_profile

    monkeypatch.setattr(factored, "PRODUCT_BLOCK_BYTES", 1024)  # a 48 x 48 product is 18 kB
    monkeypatch.setenv("SPECBOUND_CACHE", str(tmp_path / "cache"))
    dense = dense_matrices(llama)
    default = specbound.analyze(str(llama))
    validate_profile(default.bounds.profile)  # NaN stands for "not computed", and is valid
    rows = default.to_dict()["matrices"]
    for row, matrix in zip(rows, dense, strict=True):
        if row["kind"] in ("QK", "V"):
            assert row["norm_11"] is None
        else:
            assert row["norm_11"] == pytest.approx(np.abs(matrix).sum(), rel=1e-13)
        assert row["norm_21"] == pytest.approx(np.linalg.norm(matrix, axis=0).sum(), rel=1e-12)
    asked = specbound.analyze(str(llama), large_norm_11=True)  # the cached profile lacks them: computed
    for row, matrix in zip(asked.to_dict()["matrices"], dense, strict=True):
        assert row["norm_11"] == pytest.approx(np.abs(matrix).sum(), rel=1e-12)
    again = specbound.analyze(str(llama))  # the full profile is now the cached one
    assert again.to_dict()["matrices"][0]["norm_11"] == asked.to_dict()["matrices"][0]["norm_11"]
    assert again.ours_log10 == default.ours_log10  # no proxy reads the (1,1) norm


@pytest.mark.parametrize("dims", [(48, 80), (80, 48)], ids=["M_in-shaped", "M_out-shaped"])
def test_the_gram_matrix_by_blocks_is_the_lower_triangle_of_the_whole_one(dims: tuple[int, int]) -> None:
    from specbound.core.spectrum import gram_by_blocks

    rng = np.random.default_rng(11)
    matrix = rng.standard_normal(dims)
    n, m = dims
    width = 7  # blocks of 7 columns (n <= m) or 7 rows, the last one shorter
    blocks = (
        (matrix[:, j : j + width] for j in range(0, m, width))
        if n <= m
        else (matrix[i : i + width] for i in range(0, n, width))
    )
    found = gram_by_blocks(blocks, dims)
    whole = matrix @ matrix.T if n <= m else matrix.T @ matrix
    np.testing.assert_allclose(np.tril(found.gram), np.tril(whole), rtol=1e-13, atol=1e-12)
    assert not np.triu(found.gram, 1).any()  # only the lower triangle, which the eigen-solvers read
    assert found.gram.flags.f_contiguous
    assert found.norm_21 == pytest.approx(np.linalg.norm(matrix, axis=0).sum(), rel=1e-13)
    assert found.norm_11 == pytest.approx(np.abs(matrix).sum(), rel=1e-13)
    np.testing.assert_allclose(
        np.linalg.eigvalsh(found.gram), np.linalg.eigvalsh(whole), rtol=0, atol=1e-12 * np.abs(whole).max()
    )


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_large_feed_forward_matrices_are_read_block_by_block_from_the_memory_map(
    dtype: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every feed-forward matrix over the threshold: read from its mapped tensor in blocks of 3
    columns or rows, never whole; the profile agrees with dense SVDs of the matrices."""
    import specbound.core.engine as engine
    import specbound.io.checkpoints as checkpoints

    directory = write_llama(tmp_path / dtype, dtype=dtype)
    monkeypatch.setattr(engine, "MAPPED_MATRIX_BYTES", 0)
    monkeypatch.setattr(engine, "PRODUCT_BLOCK_BYTES", 8 * 48 * 3)
    whole_reads: list[str] = []
    original = checkpoints.StreamedLayer.mlp_weight

    def counted(self: checkpoints.StreamedLayer, field: str) -> np.ndarray:
        whole_reads.append(field)
        return original(self, field)

    monkeypatch.setattr(checkpoints.StreamedLayer, "mlp_weight", counted)
    profile = load_profile(str(directory), use_cache=False)
    assert whole_reads == []
    dense = dense_matrices(directory)
    sigma_1 = max(float(np.linalg.norm(m, 2)) for m in dense)
    for i, matrix in enumerate(dense):
        reference = np.linalg.svd(matrix, compute_uv=False)
        ours = profile.singular_values[i, : len(reference)]
        assert np.max(np.abs(ours - reference)) <= 1e-12 * sigma_1
        assert profile.norm_21[i] == pytest.approx(np.linalg.norm(matrix, axis=0).sum(), rel=1e-12)
        assert profile.norm_11[i] == pytest.approx(np.abs(matrix).sum(), rel=1e-12)


def test_a_bad_value_in_a_mapped_block_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    import specbound.core.engine as engine
    from specbound.core.errors import InvalidWeightsError

    directory = write_llama(tmp_path / "llama", dtype="float32")
    shard = next(
        p for p in sorted(directory.glob("model-*.safetensors")) if "layers.1.mlp.up_proj.weight" in load_file(p)
    )
    tensors = load_file(shard)
    tensors["layers.1.mlp.up_proj.weight"][70, 5] = torch.nan
    save_file(tensors, shard, metadata={"format": "pt"})
    monkeypatch.setattr(engine, "MAPPED_MATRIX_BYTES", 0)
    with pytest.raises(InvalidWeightsError, match=r"layers\.1\.mlp\.up_proj\.weight.*NaN"):
        load_profile(str(directory), use_cache=False)


def test_norms_of_large_feed_forward_matrices_by_blocks_of_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    import specbound.core.spectrum as spectrum

    matrix = np.random.default_rng(3).standard_normal((40, 70)).T  # a transposed view, as M_in is
    whole_21, whole_11 = float(spectrum.norm_21(matrix)), float(spectrum.norm_11(matrix))
    monkeypatch.setattr(spectrum, "PRODUCT_BLOCK_BYTES", 8 * 70 * 3)  # blocks of 3 columns
    assert float(spectrum.norm_21(matrix)) == pytest.approx(whole_21, rel=1e-14)
    assert float(spectrum.norm_11(matrix)) == pytest.approx(whole_11, rel=1e-14)


def test_bfloat16_weights_are_widened_exactly_as_torch_does(llama: Path) -> None:
    from safetensors.torch import load_file

    checkpoint = open_checkpoint(llama)
    ours = checkpoint.read(2, checkpoint.adapter.tensors(checkpoint.shape))
    theirs = {}
    for path in llama.glob("model-*.safetensors"):
        theirs.update(load_file(path))
    for role, spec in checkpoint.adapter.tensors(checkpoint.shape).items():
        reference = theirs[f"layers.2.{spec.name}"]
        assert str(reference.dtype) == "torch.bfloat16"
        np.testing.assert_array_equal(ours[role], reference.double().numpy())


def test_shared_key_value_factors_are_the_same_matrices_as_repeated_ones(llama: Path) -> None:
    checkpoint = open_checkpoint(llama)
    weights, shape = checkpoint.layer(1), checkpoint.shape
    qk, v = attention_heads(*weights.attention_weights(), shape)
    factors = layer_factors(weights, shape)
    for h in range(shape.num_heads):
        np.testing.assert_array_equal(qk.left[qk.left_of[h]] @ qk.right[qk.right_of[h]], factors.qk()[h])
        np.testing.assert_array_equal(v.left[v.left_of[h]] @ v.right[v.right_of[h]], factors.v()[h])
    assert qk.right.shape[0] == v.left.shape[0] == shape.num_kv_heads  # held once, never repeated


# --- streaming -------------------------------------------------------------------------------------------


def test_streamed_layers_give_the_profile_of_whole_layers(llama: Path) -> None:
    checkpoint = open_checkpoint(llama)
    whole = compute_profile(checkpoint.layers(), checkpoint.shape, workers=1)
    streamed = compute_profile(open_checkpoint(llama).stream(), checkpoint.shape, workers=1)
    np.testing.assert_array_equal(whole.singular_values, streamed.singular_values)
    np.testing.assert_array_equal(whole.norm_11, streamed.norm_11)


def test_pickled_shards_are_released_after_their_last_layer(tmp_path: Path) -> None:
    directory = write_sharded_bin(tmp_path)
    checkpoint = open_checkpoint(directory)
    reader = checkpoint._reader
    assert isinstance(reader, WeightFiles)  # the shard reader that lets go of what it read
    assert reader.held() == []  # nothing is loaded before a layer needs it
    held = []
    last_layer = {}
    for index in range(LAYERS):
        for path in checkpoint.shards(index):
            last_layer[path.name] = index
    for index, layer in enumerate(checkpoint.stream()):
        layer.attention_weights()
        for field in ("gate", "ffn_in", "ffn_out"):
            layer.mlp_weight(field)
        held.append(sorted(p.name for p in reader.held()))
        # every shard still held is one this layer reads
        assert set(held[-1]) <= {p.name for p in checkpoint.shards(index)}
    assert reader.held() == []  # all released at the end
    assert len({name for names in held for name in names}) >= 3  # the layers really came from several shards
    profile = load_profile(str(directory), use_cache=False)
    reference = load_profile(str(tmp_path / "st"), use_cache=False)
    np.testing.assert_array_equal(profile.singular_values, reference.singular_values)


def test_progress_reports_every_layer_with_a_time_left(llama: Path) -> None:
    events: list[ProgressEvent] = []
    load_profile(str(llama), ComputeOptions(workers=1), use_cache=False, progress=events.append)
    analysed = [e for e in events if e.stage == "analyse"]
    assert [e.done for e in analysed] == [1, 2, 3, 4] and {e.total for e in analysed} == {LAYERS}
    assert all(e.eta_s is not None and e.eta_s >= 0 for e in analysed)
    assert analysed[-1].eta_s == 0.0
    assert format_eta(3725) == "ETA 1 h 02 min" and format_eta(200) == "ETA 3 min 20 s" and format_eta(None) == ""


def test_layers_in_parallel_give_the_same_bits(llama: Path, make_checkpoint: MakeCheckpoint) -> None:
    for directory in (llama, make_checkpoint("bert", layers=3)):
        checkpoint = open_checkpoint(directory)
        one = compute_profile(checkpoint.stream(), checkpoint.shape, workers=1)
        two = compute_profile(open_checkpoint(directory).stream(), checkpoint.shape, workers=2)
        np.testing.assert_array_equal(one.singular_values, two.singular_values)
        np.testing.assert_array_equal(one.norm_21, two.norm_21)
        np.testing.assert_array_equal(one.norm_11, two.norm_11)


# --- the notebook API, batch commands and the command line -------------------------------------------------


def test_analyze_takes_the_backend_and_the_layer_workers(llama: Path) -> None:
    import specbound

    reference = specbound.analyze(str(llama), use_cache=False)
    on_torch = specbound.analyze(str(llama), use_cache=False, backend="torch", device="cpu")
    two_at_once = specbound.analyze(str(llama), use_cache=False, layer_workers=2)
    sv, sv_torch = reference.bounds.profile.singular_values, on_torch.bounds.profile.singular_values
    assert np.max(np.abs(sv - sv_torch)) <= 1e-12 * sv.max()
    np.testing.assert_array_equal(sv, two_at_once.bounds.profile.singular_values)
    assert on_torch.ours_log10 == pytest.approx(reference.ours_log10, rel=1e-12)
    with pytest.raises(BackendError, match="CPU only"):
        specbound.analyze(str(llama), use_cache=False, device="cuda")


def test_a_model_in_memory_streams_one_layer_at_a_time_and_is_never_cached(
    llama: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    import specbound
    import specbound.core.engine as engine

    model = transformers.AutoModel.from_pretrained(llama)
    seen: list[str] = []
    original = engine.analyse_layer

    def recording(
        layer: LayerSource, shape: ModelShape, backend: Backend | None = None, **options: Any
    ) -> LayerSpectra:
        seen.append(type(layer).__name__)
        assert isinstance(layer, StreamedLayer)
        assert layer.revision is None  # no files: nothing to key a resumed layer by
        return original(layer, shape, backend, **options)

    monkeypatch.setattr(engine, "analyse_layer", recording)
    in_memory = specbound.analyze(model, backend="torch")
    assert seen == ["StreamedLayer"] * LAYERS
    monkeypatch.undo()
    from_disk = load_profile(str(llama), use_cache=False)
    sv = from_disk.singular_values
    assert np.max(np.abs(in_memory.bounds.profile.singular_values - sv)) <= 1e-12 * sv.max()


def test_batch_tasks_side_by_side_analyse_one_layer_at_a_time() -> None:
    from specbound.io.options import ComputeOptions
    from specbound.studies.parallel import Executor

    backend = BackendSpec("torch", "cpu")
    assert Executor().compute_options(ComputeOptions(backend, workers=None)) == ComputeOptions(backend, workers=None)
    assert Executor(workers=2).compute_options(ComputeOptions(workers=None)).workers == 1
    assert Executor(workers=2).compute_options(ComputeOptions(workers=3)).workers == 3  # what the user asked
    assert Executor(dask="tcp://127.0.0.1:8786").compute_options(None).workers == 1


def test_grid_and_trajectory_take_the_compute_options(llama: Path, tmp_path: Path) -> None:
    reference = load_profile(str(llama), use_cache=False)
    grid = run_cli(
        "grid", "--models", str(llama), "--out", str(tmp_path / "grid"), "--atlas", str(tmp_path / "grid.npz"),
        "--no-cache", "--backend", "torch", "--layer-workers", "2",
    )  # fmt: skip
    assert grid.returncode == 0, grid.stderr
    step = shutil.copytree(llama, tmp_path / "saved" / "checkpoint-10")
    trajectory = run_cli(
        "trajectory", str(step), "--out", str(tmp_path / "run"), "--no-cache", "--backend", "torch", "--workers", "2"
    )
    assert trajectory.returncode == 0, trajectory.stderr
    from specbound.io.atlas import load_atlas

    for atlas in (tmp_path / "grid.npz", tmp_path / "run" / "trajectory.npz"):
        (profile,) = load_atlas(atlas)
        sv = reference.singular_values
        assert np.max(np.abs(profile.singular_values - sv)) <= 1e-12 * sv.max()
        assert not np.array_equal(profile.singular_values, sv)  # torch's LAPACK did run: not numpy's bits
    assert_one_line_error(
        run_cli("grid", "--models", str(llama), "--out", str(tmp_path / "g2"), "--layer-workers", "0"),
        "layer workers",
        status=2,
    )


# --- resuming --------------------------------------------------------------------------------------------

#: Analyses a checkpoint and SIGKILLs itself in the middle of layer 2: the first eigen-solve of that
#: layer (its gate matrix), after its attention heads are done.
KILLED_IN_LAYER_2 = """
import os, signal, sys
from specbound.core.backend import Backend, NumpyBackend
from specbound.io.loading import load_profile
from specbound.io.options import ComputeOptions

class DiesInLayer2(NumpyBackend):
    solves = 0
    def eigvalsh(self, t):
        DiesInLayer2.solves += 1
        if DiesInLayer2.solves == 4:  # three per layer (gate, up, down): the fourth is layer 2's first
            os.kill(os.getpid(), signal.SIGKILL)
        return super().eigvalsh(t)

load_profile(sys.argv[1], ComputeOptions(backend=DiesInLayer2(), workers=1))
"""

#: Counts the layers a run computes (the others come from the cache).
COUNT_COMPUTED = """
import json, sys
import specbound.core.engine as engine
import specbound.io.loading as loading
from specbound.io.options import ComputeOptions
computed = []
original = engine.analyse_layer
def counting(layer, shape, backend=None, **options):
    computed.append(layer.index)
    return original(layer, shape, backend, **options)
engine.analyse_layer = counting
loading.load_profile(sys.argv[1], ComputeOptions(workers=1))
print(json.dumps(computed))
"""


@pytest.mark.slow
def test_a_killed_analysis_resumes_at_the_next_layer_with_a_byte_identical_result(llama: Path, tmp_path: Path) -> None:
    fresh = {"SPECBOUND_CACHE": str(tmp_path / "uninterrupted")}
    uninterrupted = run_cli("analyze", str(llama), "--json", env=fresh)
    assert uninterrupted.returncode == 0, uninterrupted.stderr

    env = {**os.environ, "SPECBOUND_CACHE": str(tmp_path / "cache")}
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_LAYER_2, str(llama)], env=env, timeout=300)
    assert killed.returncode == -signal.SIGKILL
    entries = sorted((tmp_path / "cache").glob("*.layer.npz"))
    assert len(entries) == 1  # layer 1 finished and stored; layer 2 was cut short

    resumed = subprocess.run(
        [sys.executable, "-c", COUNT_COMPUTED, str(llama)], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == [1, 2, 3]  # layer 1 (index 0) came from its entry
    assert list((tmp_path / "cache").glob("*.layer.npz")) == []  # the whole profile replaced them

    again = run_cli("analyze", str(llama), "--json", env={"SPECBOUND_CACHE": str(tmp_path / "cache")})
    assert again.stdout == uninterrupted.stdout  # byte for byte


def test_a_layer_entry_of_a_wide_model_reads_back(tmp_path: Path) -> None:
    # 66 rows of 2048 values: a member of 1.08 MB, past the size of the small JSON records
    shape = ModelShape(1, 2048, 32, 64, mlp=Mlp.GATED, activation="silu")
    rows, n = shape.matrices_per_layer, shape.hidden_size
    sv = np.sort(np.random.default_rng(0).random((rows, n)), axis=1)[:, ::-1].copy()
    sv[2 * shape.num_heads :, 64:] = 0.0  # the MLP kinds have min(N, d_ff) = 64 values
    cache = ProfileCache(tmp_path)
    cache.save_layer("wide", "r1", 0, shape, sv, np.ones(rows), np.ones(rows))
    found = cache.load_layer("wide", "r1", 0, shape)
    assert found is not None
    np.testing.assert_array_equal(found[0], sv)


def test_a_corrupt_layer_entry_is_recomputed(llama: Path, tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path / "cache")
    checkpoint = open_checkpoint(llama)
    shape = checkpoint.shape
    reference = load_profile(str(llama), use_cache=False)
    rows = shape.matrices_per_layer
    revision = f"{checkpoint.layer_revision(0)}:numpy"
    path = cache.save_layer(
        str(llama.resolve()), revision, 0, shape, reference.singular_values[:rows] * 2, reference.norm_21[:rows],
        reference.norm_11[:rows],
    )  # fmt: skip
    data = bytearray(path.read_bytes())
    data[-200] ^= 0xFF
    path.write_bytes(bytes(data))
    profile = load_profile(str(llama), cache=cache)
    np.testing.assert_array_equal(profile.singular_values, reference.singular_values)
    assert not path.exists()


# --- the Hub: shards in layer order, analysed while the next ones download ---------------------------------

REPORT_ORDER = """
import json, sys
import torch  # imported before the clock matters (bf16 tensors are read through it)
from specbound.io.loading import load_profile
from specbound.io.options import ComputeOptions
events = []
record = lambda e: events.append([e.stage, e.detail, e.done, e.total])
load_profile(sys.argv[1], ComputeOptions(workers=1), progress=record)
print(json.dumps(events))
"""


@pytest.mark.slow
def test_hub_shards_are_fetched_in_layer_order_while_the_first_layers_are_analysed(llama: Path, tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub") as hub:
        repo = hub.add("someone/sharded-llama", llama)
        shards = sorted(p.name for p in repo.glob("model-*.safetensors"))
        for name in shards[2:]:
            hub.delays[name] = 1.0  # layer 1 is in the first two shards; the others come slowly
        env = dict(
            os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"), SPECBOUND_CACHE=str(tmp_path / "profiles")
        )
        env.pop("HF_HUB_OFFLINE", None)
        result = subprocess.run(
            [sys.executable, "-c", REPORT_ORDER, "someone/sharded-llama"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    events = json.loads(result.stdout)
    size = sum((repo / name).stat().st_size for name in shards)
    announced = next(i for i, e in enumerate(events) if e[1] == f"{len(shards)} weight files")
    assert events[announced][2:] == [0, size]  # the size is shown before any weight byte is fetched
    assert not any(e[1].endswith(".safetensors") for e in events[:announced])
    finished = [detail for stage, detail, done, total in events if stage == "download" and done == total and total]
    weight_files = [name for name in finished if name.endswith(".safetensors")]
    assert weight_files == sorted(weight_files)  # layer order is file order for save_pretrained's shards
    last_done = next(i for i, e in enumerate(events) if e[0] == "download" and e[1] == shards[-1] and e[2] == e[3])
    first_layer = next(i for i, e in enumerate(events) if e[0] == "analyse")
    assert first_layer < last_done  # layer 1 was analysed while the last shard was still coming


def test_the_command_line_download_cap(llama: Path, tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub") as hub:
        hub.add("someone/sharded-llama", llama)
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "SPECBOUND_CACHE": str(tmp_path / "p")}
        refused = run_cli(
            "analyze", "someone/sharded-llama", "--max-download-gb", "0.00001", env=env, unset=("HF_HUB_OFFLINE",)
        )
        assert_one_line_error(refused, "more than the download cap of 0 MB", "--max-download-gb")
        operator = {**env, "SPECBOUND_MAX_DOWNLOAD_MB": "0"}  # the option wins over the server's setting
        allowed = run_cli(
            "analyze", "someone/sharded-llama", "--json", "--max-download-gb", "1", env=operator,
            unset=("HF_HUB_OFFLINE",),
        )  # fmt: skip
        assert allowed.returncode == 0, allowed.stderr
    assert_one_line_error(run_cli("analyze", str(llama), "--max-download-gb", "-1"), "download cap", status=2)


# --- limits from the family's shapes ------------------------------------------------------------------------


def test_70b_class_shapes_are_within_the_limits(tmp_path: Path) -> None:
    config = {
        "model_type": "llama",
        "num_hidden_layers": 80,
        "hidden_size": 8192,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "intermediate_size": 28672,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    shape, adapter = read_config(tmp_path)
    assert (shape.num_layers, shape.num_heads, shape.num_kv_heads, shape.head_dim) == (80, 64, 8, 128)
    stored = {role: spec.shape for role, spec in adapter.tensors(shape).items()}
    peak = layer_peak_bytes(shape, stored)
    # the gate matrix (8192 x 28672) with its Gram matrix and the solver's copy: 2.95 GB
    assert peak == 8 * (8192 * 28672 + 2 * 8192**2) <= LIMITS.max_layer_bytes
    # the whole layer in float64 at once would be 6.8 GB
    assert 8 * shape.layer_weight_values > 2 * peak
    with pytest.raises(SpecboundError, match="GiB in float64"):
        check_encoder_shape(ModelShape(80, 8192, 64, 28672, num_kv_heads=64, head_dim=1024, mlp=Mlp.GATED), "test")
