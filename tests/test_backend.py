"""The backend seam: what each backend can do around it, asked by callers instead of its name."""

from __future__ import annotations

import os

import numpy as np
import pytest

import specbound.loading as loading
import specbound.spectrum as spectrum
from specbound.architecture import ModelShape
from specbound.backend import NumpyBackend, get_backend
from specbound.matrices import LayerWeights
from specbound.spectrum import FactoredHeads, head_spectra

SHAPE = ModelShape(2, 32, 4, 48)


class NumpyWithout(NumpyBackend):
    """numpy's calls, each capability switched off: the routes taken must follow the capabilities."""

    host_products = reads_mapped_blocks = layers_in_threads = False


def _layer(seed: int = 0) -> LayerWeights:
    rng = np.random.default_rng(seed)
    return LayerWeights(**{k: rng.normal(0, 0.1, s) for k, s in LayerWeights.expected_shapes(SHAPE).items()})


def test_the_numpy_backend_can_do_everything_and_the_torch_one_none_of_it() -> None:
    numpy, torch = get_backend(), get_backend("torch", "cpu")
    assert (numpy.host_products, numpy.reads_mapped_blocks, numpy.layers_in_threads) == (True, True, True)
    assert (torch.host_products, torch.reads_mapped_blocks, torch.layers_in_threads) == (False, False, False)


def test_products_are_formed_with_numpy_only_on_a_backend_with_host_products(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    products = FactoredHeads.unshared(rng.standard_normal((3, 20, 5)), rng.standard_normal((3, 5, 30)))
    whole = head_spectra(products)
    calls: list[str] = []
    original = spectrum._entrywise_norms_whole
    monkeypatch.setattr(spectrum, "_entrywise_norms_whole", lambda p: calls.append("whole") or original(p))
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


@pytest.mark.parametrize(("backend", "asked"), [(NumpyBackend(), ["ffn_in", "ffn_out"]), (NumpyWithout(), [])])
def test_mapped_blocks_are_asked_for_only_by_a_backend_that_reads_them(monkeypatch, backend, asked) -> None:
    monkeypatch.setattr(loading, "MAPPED_MATRIX_BYTES", 0)  # every feed-forward matrix counts as large
    layer = MappedSpy(**vars(_layer()))
    layer.asked = []
    spectra = loading.analyse_layer(layer, SHAPE, backend)
    assert layer.asked == asked
    reference = loading.analyse_layer(_layer(), SHAPE)
    np.testing.assert_array_equal(spectra.singular_values, reference.singular_values)


def test_layers_run_side_by_side_only_on_a_backend_that_allows_it() -> None:
    cores = os.cpu_count() or 1
    assert loading.default_workers(SHAPE, get_backend()) == max(1, min(cores, SHAPE.num_layers))
    assert loading.default_workers(SHAPE, NumpyWithout()) == 1
    assert loading.default_workers(SHAPE, get_backend("torch", "cpu")) == 1
