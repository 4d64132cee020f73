"""Every singular value specbound reports for every family equals numpy's dense SVD of the matrix, and
every weight format of one model gives the same profile, bit for bit.

The reference matrices are formed here from the checkpoint's state dict, read with torch and
arranged by the Hugging Face modules' own arithmetic (:func:`family_models.proxy_matrices`), not by
specbound's adapters. The profile is specbound's whole path: ``load_profile(dir)``, i.e. config.json
-> family adapter -> factored singular values.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from family_models import FAMILIES, FORMATS, Built, Sizes, layer_prefix, proxy_matrices, read_state

from specbound.core.defaults import RANK_TOL
from specbound.core.engine import compute_profile
from specbound.core.profile import SpectralProfile
from specbound.io.checkpoints import StreamedLayer, open_checkpoint, safetensors_header
from specbound.io.loading import load_profile


def _kinds_of_a_layer(heads: int, gated: bool) -> list[str]:
    return ["QK"] * heads + ["V"] * heads + (["M_gate"] if gated else []) + ["M_in", "M_out"]


@pytest.mark.parametrize("name", FAMILIES)
def test_every_singular_value_matches_a_dense_svd(tiny: Callable[[str], Built], name: str) -> None:
    built = tiny(name)
    _check_against_dense(built, load_profile(str(built.dirs["safetensors"]), use_cache=False))


@pytest.mark.parametrize("name", FAMILIES)
def test_feed_forward_matrices_read_by_blocks_from_the_memory_map_match_a_dense_svd(
    tiny: Callable[[str], Built], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route of a large model's feed-forward matrices (each adapter's stored orientation viewed
    through the memory map, widened block by block), forced here on every family's tiny model."""
    import specbound.core.engine as engine

    monkeypatch.setattr(engine, "MAPPED_MATRIX_BYTES", 0)
    monkeypatch.setattr(engine, "PRODUCT_BLOCK_BYTES", 8 * 64 * 5)  # blocks of a few columns or rows

    def whole(layer: StreamedLayer, field: str) -> np.ndarray:
        raise AssertionError(f"{field} was read whole")

    monkeypatch.setattr(StreamedLayer, "mlp_weight", whole)
    built = tiny(name)
    _check_against_dense(built, load_profile(str(built.dirs["safetensors"]), use_cache=False))


def _check_against_dense(built: Built, profile: SpectralProfile) -> None:
    directory = built.dirs["safetensors"]
    reference = proxy_matrices(built, read_state(directory), "safetensors")
    sizes, layers, gated = Sizes.of(built.config), built.config.num_hidden_layers, built.family.gated

    per_layer = 2 * sizes.heads + (3 if gated else 2)
    assert profile.shape.num_matrices == len(reference) == layers * per_layer
    assert list(profile.kinds) == _kinds_of_a_layer(sizes.heads, gated) * layers
    assert list(profile.kinds) == [kind for kind, _, _ in reference]
    assert [i.head for i in profile.ids] == [head for _, head, _ in reference]

    for i, (kind, head, matrix) in enumerate(reference):
        dense = np.linalg.svd(matrix, compute_uv=False)
        k = min(matrix.shape)
        assert profile.full_dims[i] == k
        got = profile.singular_values_of(i)
        assert got.shape == dense.shape
        np.testing.assert_allclose(got, dense, rtol=0, atol=1e-9 * dense[0], err_msg=f"{kind} head {head}")
        # numerical rank: sigma_i > tau k max(sigma_1, 1); random weights have full rank d or min(N, d_ff)
        rank = int(np.sum(dense > RANK_TOL * k * max(dense[0], 1.0)))
        full = min(sizes.head_dim, sizes.hidden) if kind in ("QK", "V") else min(matrix.shape)
        assert profile.rank[i] == rank == full
        np.testing.assert_allclose(profile.norm_21[i], np.linalg.norm(matrix, axis=0).sum(), rtol=1e-12)
        np.testing.assert_allclose(profile.norm_11[i], np.abs(matrix).sum(), rtol=1e-12)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_weight_format_gives_the_same_profile(tiny: Callable[[str], Built], name: str) -> None:
    built = tiny(name)
    dirs = built.dirs
    _assert_formats_are_what_they_claim(built)
    profiles = {fmt: load_profile(str(dirs[fmt]), use_cache=False) for fmt in FORMATS}
    checkpoint = open_checkpoint(dirs["bin"])
    profiles["compute_profile"] = compute_profile(checkpoint.layers(), checkpoint.shape)
    first = profiles["safetensors"]
    assert np.count_nonzero(first.singular_values) > 0
    for fmt, profile in profiles.items():
        assert profile.shape == first.shape, fmt
        for field in ("singular_values", "norm_21", "norm_11", "full_dims"):
            assert np.array_equal(getattr(profile, field), getattr(first, field)), (fmt, field)


def _assert_formats_are_what_they_claim(built: Built) -> None:
    """Each directory holds only its own format, the shards are several, and the head's prefix is there."""
    dirs = built.dirs
    names = {fmt: sorted(p.name for p in dirs[fmt].iterdir()) for fmt in FORMATS}
    assert "model.safetensors" in names["safetensors"]
    shards = [n for n in names["sharded-safetensors"] if n.startswith("model-") and n.endswith(".safetensors")]
    assert len(shards) >= 2 and "model.safetensors.index.json" in names["sharded-safetensors"]
    assert "model.safetensors" not in names["sharded-safetensors"]
    assert [n for n in names["bin"] if "model" in n] == ["pytorch_model.bin"]
    bins = [n for n in names["sharded-bin"] if n.startswith("pytorch_model-")]
    assert len(bins) == 3 and "pytorch_model.bin.index.json" in names["sharded-bin"]
    assert not [n for n in names["sharded-bin"] if "safetensors" in n]
    index = json.loads((dirs["sharded-bin"] / "pytorch_model.bin.index.json").read_text())
    assert set(index["weight_map"].values()) == set(bins)

    key = f"{layer_prefix(built, 'safetensors', 0)}{built.family.weights['ffn_out']}.weight"
    bare = f"{layer_prefix(built, 'bare', 0)}{built.family.weights['ffn_out']}.weight"
    assert key != bare and key.endswith(bare)
    assert key in safetensors_header(dirs["safetensors"] / "model.safetensors")
    assert bare in safetensors_header(dirs["bare"] / "model.safetensors")
