"""The backend seam: what each backend can do around it (asked by callers instead of its name), and which
library solves its large eigenproblems (a recorded choice of the spec, said in what computed an analysis)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import specbound.core.backend as backend
import specbound.core.engine as engine
import specbound.core.factored as factored
import specbound.io.loading as loading
from specbound import compute_profile
from specbound.core.architecture import ModelShape
from specbound.core.backend import (
    LARGE_EIGEN_ORDER,
    BackendError,
    BackendSpec,
    NumpyBackend,
    get_backend,
    large_eigvalsh,
)
from specbound.core.factored import FactoredHeads, head_spectra
from specbound.core.matrices import LayerWeights
from specbound.io.cache import ProfileCache

SHAPE = ModelShape(2, 32, 4, 48)


class NumpyWithout(NumpyBackend):
    """numpy's calls, each capability switched off: the routes taken must follow the capabilities."""

    host_products = reads_mapped_blocks = layers_in_threads = False


def _layer(seed: int = 0) -> LayerWeights:
    rng = np.random.default_rng(seed)
    return LayerWeights.of_fields({k: rng.normal(0, 0.1, s) for k, s in LayerWeights.expected_shapes(SHAPE).items()})


def test_the_numpy_backend_can_do_everything_and_the_torch_one_none_of_it() -> None:
    numpy, torch = get_backend(), get_backend("torch", "cpu")
    assert (numpy.host_products, numpy.reads_mapped_blocks, numpy.layers_in_threads) == (True, True, True)
    assert (torch.host_products, torch.reads_mapped_blocks, torch.layers_in_threads) == (False, False, False)


def test_products_are_formed_with_numpy_only_on_a_backend_with_host_products(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    products = FactoredHeads.unshared(rng.standard_normal((3, 20, 5)), rng.standard_normal((3, 5, 30)))
    whole = head_spectra(products)
    calls: list[str] = []
    original = factored._entrywise_norms_whole

    def whole_norms(p: FactoredHeads) -> tuple[np.ndarray, np.ndarray]:
        calls.append("whole")
        return original(p)

    monkeypatch.setattr(factored, "_entrywise_norms_whole", whole_norms)
    head_spectra(products, NumpyWithout())
    assert calls == []  # the spec's name is still "numpy": the capability decided
    blocked = head_spectra(products, NumpyWithout())
    np.testing.assert_allclose(blocked.norm_21, whole.norm_21, rtol=1e-13)
    np.testing.assert_allclose(blocked.norm_11, whole.norm_11, rtol=1e-13)
    head_spectra(products)
    assert calls == ["whole"]


class MappedSpy(LayerWeights):
    asked: list[str]

    def mlp_mapped(self, field: str) -> None:
        self.asked.append(field)
        return None


@pytest.mark.parametrize(("be", "asked"), [(NumpyBackend(), ["ffn_in", "ffn_out"]), (NumpyWithout(), [])])
def test_mapped_blocks_are_asked_for_only_by_a_backend_that_reads_them(
    monkeypatch: pytest.MonkeyPatch, be: NumpyBackend, asked: list[str]
) -> None:
    monkeypatch.setattr(engine, "MAPPED_MATRIX_BYTES", 0)  # every feed-forward matrix counts as large
    layer = MappedSpy(**vars(_layer()))
    layer.asked = []
    spectra = engine.analyse_layer(layer, SHAPE, be)
    assert layer.asked == asked
    reference = engine.analyse_layer(_layer(), SHAPE)
    np.testing.assert_array_equal(spectra.singular_values, reference.singular_values)


def test_layers_run_side_by_side_only_on_a_backend_that_allows_it() -> None:
    cores = os.cpu_count() or 1
    assert engine.default_workers(SHAPE, get_backend()) == max(1, min(cores, SHAPE.num_layers))
    assert engine.default_workers(SHAPE, NumpyWithout()) == 1
    assert engine.default_workers(SHAPE, get_backend("torch", "cpu")) == 1


# --- the large eigen-solves: a recorded choice of the spec ------------------------------------------


def test_the_spec_records_which_library_solves_the_large_eigenproblems() -> None:
    default = BackendSpec()
    assert default.large_eigen == "torch"  # torch is installed here
    assert default == BackendSpec("numpy", "cpu", "torch")
    assert [default.eigen_solver(n) for n in (1024, LARGE_EIGEN_ORDER - 1, LARGE_EIGEN_ORDER)] == [
        "numpy",
        "numpy",
        "torch",
    ]
    assert default.label_for(1024) == "numpy"  # every BERT-family model: the label of before
    assert default.label_for(4096) == "numpy+torch-eigh"
    own = BackendSpec("numpy", large_eigen="numpy")
    assert own.eigen_solver(4096) == "numpy" and own.label_for(4096) == "numpy"
    assert BackendSpec("torch", "cpu").large_eigen == "torch"
    assert BackendSpec("torch", "cpu").label_for(4096) == "torch:cpu"
    with pytest.raises(BackendError, match="itself"):
        BackendSpec("torch", "cpu", "numpy")
    with pytest.raises(BackendError, match="unknown eigen-solver"):
        BackendSpec("numpy", large_eigen="jax")  # type: ignore[arg-type]


def test_the_numpy_backend_solves_with_the_library_its_spec_names() -> None:
    rng = np.random.default_rng(3)
    factor = rng.standard_normal((LARGE_EIGEN_ORDER, LARGE_EIGEN_ORDER + 8))
    gram = factor @ factor.T  # (2048, 2048): the hand-off's order
    by_numpy = np.linalg.eigvalsh(gram)
    np.testing.assert_array_equal(get_backend(BackendSpec("numpy", large_eigen="numpy")).eigvalsh(gram), by_numpy)
    by_torch = get_backend().eigvalsh(gram)
    np.testing.assert_array_equal(by_torch, large_eigvalsh(gram))
    assert not np.array_equal(by_torch, by_numpy)  # another LAPACK's bits, to rounding
    assert np.max(np.abs(by_torch - by_numpy)) <= 1e-13 * by_numpy[-1]


class RevisionedLayer(LayerWeights):
    """A layer with its own revision, as a streamed checkpoint layer has (what the resume entries key on)."""

    revision: str


def _revisioned(index: int) -> RevisionedLayer:
    layer = RevisionedLayer(**vars(_layer(index)))
    layer.revision = f"r{index}"
    return layer


def test_an_analysis_whose_gram_matrices_go_to_torch_is_recorded_as_computed_by_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(backend, "LARGE_EIGEN_ORDER", 32)  # SHAPE's feed-forward Gram matrices are 32 x 32
    solved: list[tuple[int, ...]] = []
    original = backend.large_eigvalsh

    def large(t: np.ndarray) -> np.ndarray:
        solved.append(t.shape)
        return original(t)

    monkeypatch.setattr(backend, "large_eigvalsh", large)
    cache = ProfileCache(tmp_path)
    layers = [_revisioned(i) for i in range(SHAPE.num_layers)]
    entries = loading.ResumeEntries(cache, "m", SHAPE, get_backend())
    assert entries.label == "numpy+torch-eigh"
    by_torch = compute_profile(layers, SHAPE, workers=1, layer_cache=entries)
    assert solved == [(32, 32)] * 2 * SHAPE.num_layers  # M_in and M_out of each layer
    assert [cache.load_layer("m", f"r{i}:numpy+torch-eigh", i, SHAPE) is not None for i in range(2)] == [True, True]
    assert cache.load_layer("m", "r0:numpy", 0, SHAPE) is None
    solved.clear()
    own = get_backend(BackendSpec("numpy", large_eigen="numpy"))
    assert loading.ResumeEntries(cache, "m", SHAPE, own).label == "numpy"
    by_numpy = compute_profile(layers, SHAPE, workers=1, backend=own)
    assert solved == []
    sv = by_numpy.singular_values
    assert np.max(np.abs(by_torch.singular_values - sv)) <= 1e-12 * sv.max()


def test_an_entry_stored_under_the_label_of_before_is_recomputed_not_trusted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A layer entry of a large model from before the hand-off was recorded says only "numpy": it no
    longer matches, so that layer is computed again (and nothing fails)."""
    monkeypatch.setattr(backend, "LARGE_EIGEN_ORDER", 32)
    layers = [_revisioned(i) for i in range(SHAPE.num_layers)]
    reference = compute_profile(layers, SHAPE, workers=1)
    rows = SHAPE.matrices_per_layer
    cache = ProfileCache(tmp_path)
    cache.save_layer(
        "m",
        "r0:numpy",
        0,
        SHAPE,
        reference.singular_values[:rows] * 2,
        reference.norm_21[:rows],
        reference.norm_11[:rows],
    )
    entries = loading.ResumeEntries(cache, "m", SHAPE, get_backend())
    resumed = compute_profile(layers, SHAPE, workers=1, layer_cache=entries)
    np.testing.assert_array_equal(resumed.singular_values, reference.singular_values)
