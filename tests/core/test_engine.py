"""The per-layer engine (``specbound.core.engine``): each layer's rows are the singular values and norms
of its proxy matrices formed densely here from the raw weights (SPEC §2: QK_h = Q_hᵀ K_g(h),
V_h = V_g(h)ᵀ O_h, M_in and M_out as row-vector maps), heads sliced by hand; layers analysed in
parallel give the serial numbers bit for bit; a layer cache is read before a layer is computed and
written after; progress counts every layer; and how many layers run at once."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from specbound.core import engine
from specbound.core.architecture import ModelShape
from specbound.core.backend import Backend, get_backend
from specbound.core.engine import LayerSpectra, analyse_layer, compute_profile, default_workers
from specbound.core.matrices import LayerSource, LayerWeights
from specbound.core.progress import ProgressEvent

N, D_FF = 8, 12
#: four query heads of d = 2 sharing two key/value heads (grouped-query attention: g(h) = h // 2)
GQA = ModelShape(3, N, 4, D_FF, num_kv_heads=2)


def random_layer(rng: np.random.Generator, shape: ModelShape) -> LayerWeights:
    hd, kvd = shape.num_heads * shape.head_dim, shape.num_kv_heads * shape.head_dim
    return LayerWeights(
        query=rng.normal(size=(hd, N)),
        key=rng.normal(size=(kvd, N)),
        value=rng.normal(size=(kvd, N)),
        attn_out=rng.normal(size=(N, hd)),
        ffn_in=rng.normal(size=(D_FF, N)),
        ffn_out=rng.normal(size=(N, D_FF)),
    )


def dense_matrices(layer: LayerWeights, shape: ModelShape) -> list[np.ndarray]:
    """The layer's 2H + 2 proxy matrices in profile order, each formed whole from its head's slices."""
    d, heads = shape.head_dim, range(shape.num_heads)
    group = shape.num_heads // shape.num_kv_heads

    def rows(weight: np.ndarray, head: int) -> np.ndarray:  # (d, N): the head's output rows
        return weight[head * d : (head + 1) * d]

    qk = [rows(layer.query, h).T @ rows(layer.key, h // group) for h in heads]
    v = [rows(layer.value, h // group).T @ layer.attn_out[:, h * d : (h + 1) * d].T for h in heads]
    assert layer.ffn_in is not None and layer.ffn_out is not None
    return [*qk, *v, layer.ffn_in.T, layer.ffn_out.T]


def test_a_layers_rows_are_those_of_its_dense_matrices() -> None:
    layer = random_layer(np.random.default_rng(0), GQA)
    spectra = analyse_layer(layer, GQA, get_backend())
    matrices = dense_matrices(layer, GQA)
    assert spectra.singular_values.shape == (2 * 4 + 2, N)
    for row, matrix in enumerate(matrices):
        sv = np.linalg.svd(matrix, compute_uv=False)
        rank = min(matrix.shape) if row >= 8 else GQA.head_dim  # a head's product has rank d = 2
        np.testing.assert_allclose(spectra.singular_values[row, :rank], sv[:rank], rtol=1e-10)
        np.testing.assert_allclose(spectra.singular_values[row, rank:], 0.0, atol=1e-10)  # padded with zeros
        np.testing.assert_allclose(spectra.norm_21[row], np.linalg.norm(matrix, axis=0).sum(), rtol=1e-10)
        np.testing.assert_allclose(spectra.norm_11[row], np.abs(matrix).sum(), rtol=1e-10)


def layers(seed: int = 2, shape: ModelShape = GQA) -> list[LayerWeights]:
    rng = np.random.default_rng(seed)
    return [random_layer(rng, shape) for _ in range(shape.num_layers)]


def test_layers_in_parallel_give_the_serial_numbers_bit_for_bit() -> None:
    serial = compute_profile(layers(), GQA, workers=1)
    parallel = compute_profile(layers(), GQA, workers=3)
    np.testing.assert_array_equal(parallel.singular_values, serial.singular_values)
    np.testing.assert_array_equal(parallel.norm_21, serial.norm_21)
    np.testing.assert_array_equal(parallel.norm_11, serial.norm_11)
    assert serial.singular_values.shape == (3 * 10, N)  # L (2H + 2) rows


class DictCache:
    """A layer cache in a dict, recording what it is asked."""

    def __init__(self) -> None:
        self.kept: dict[int, LayerSpectra] = {}
        self.loads: list[int] = []
        self.saves: list[int] = []

    def load(self, index: int, layer: object) -> LayerSpectra | None:
        self.loads.append(index)
        return self.kept.get(index)

    def save(self, index: int, layer: object, spectra: LayerSpectra) -> None:
        self.saves.append(index)
        self.kept[index] = spectra


@pytest.mark.parametrize("workers", [1, 2])
def test_a_layer_cache_is_read_first_and_written_after(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    cache = DictCache()
    first = compute_profile(layers(), GQA, workers=workers, layer_cache=cache)
    assert cache.loads == [0, 1, 2] and cache.saves == [0, 1, 2]
    del cache.kept[1]  # an analysis interrupted in layer 1: layers 0 and 2 are kept
    computed: list[int | None] = []
    original = engine.analyse_layer

    def counting(
        layer: LayerSource,
        shape: ModelShape,
        backend: Backend | None = None,
        *,
        index: int | None = None,
        large_norm_11: bool = False,
    ) -> LayerSpectra:
        computed.append(index)
        return original(layer, shape, backend, index=index, large_norm_11=large_norm_11)

    monkeypatch.setattr(engine, "analyse_layer", counting)
    events: list[ProgressEvent] = []
    resumed = compute_profile(layers(), GQA, workers=workers, layer_cache=cache, progress=events.append)
    assert computed == [1] and cache.saves == [0, 1, 2, 1]
    np.testing.assert_array_equal(resumed.singular_values, first.singular_values)
    assert [(e.stage, e.done, e.total) for e in events] == [("analyse", i, 3) for i in (1, 2, 3)]
    assert events[0].eta_s is None and events[1].eta_s is not None  # an estimate once one layer was timed


def test_how_many_layers_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    numpy = get_backend()
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # the os module the engine asks
    assert default_workers(GQA, numpy) == 2  # small layers: one per core
    assert default_workers(dataclasses.replace(GQA, num_layers=1), numpy) == 1  # no more than the layers
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert default_workers(ModelShape(24, 64, 4, 256), numpy) == engine.MAX_LAYER_WORKERS
    large = ModelShape(32, 8192, 64, 28672)  # a layer of a 70B-class decoder: analysed alone
    assert default_workers(large, numpy) == 1


def test_no_layer_is_an_error_and_a_stack_with_its_own_widths_needs_the_index() -> None:
    with pytest.raises(ValueError, match="no layers given"):
        compute_profile([], GQA)
    bart = ModelShape(2, N, 2, D_FF, encoder_layers=1, decoder_ffn_size=16)
    with pytest.raises(ValueError, match="index is needed"):
        analyse_layer(random_layer(np.random.default_rng(3), ModelShape(1, N, 2, D_FF)), bart)
