"""Loading real checkpoints written by ``save_pretrained``, and every way a checkpoint can be bad.

The reference for each profile is built here, independently of specbound: the model is reloaded with
transformers, its ``state_dict()`` is read, the proxy matrices are formed densely in float64 and
numpy's dense SVD gives their singular values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bad_checkpoints import BAD_CHECKPOINTS, edit_weights
from tiny_models import MakeCheckpoint, save_model, tiny_model

from specbound import Kind, MatrixId, ModelShape, load_profile
from specbound.core.errors import CheckpointError
from specbound.core.profile import SpectralProfile
from specbound.io.checkpoints import fingerprint, open_checkpoint, weight_files

#: (out, in) weight names per family, relative to one layer.
BERT_KEYS = (
    "attention.self.query.weight",
    "attention.self.key.weight",
    "attention.self.value.weight",
    "attention.output.dense.weight",
    "intermediate.dense.weight",
    "output.dense.weight",
)
DISTIL_KEYS = (
    "attention.q_lin.weight",
    "attention.k_lin.weight",
    "attention.v_lin.weight",
    "attention.out_lin.weight",
    "ffn.lin1.weight",
    "ffn.lin2.weight",
)


# --- a reference built from the model's own weights ----------------------------------------------


def dense_reference(
    state: Mapping[str, Any], shape: ModelShape, root: str, keys: tuple[str, ...]
) -> dict[MatrixId, tuple[np.ndarray, np.ndarray]]:
    """MatrixId -> (dense proxy matrix, its singular values from numpy's dense SVD)."""
    H, d = shape.num_heads, shape.head_dim
    out: dict[MatrixId, np.ndarray] = {}
    for layer in range(shape.num_layers):
        wq, wk, wv, wo, w_int, w_out = (state[f"{root}.{layer}.{k}"].detach().double().numpy() for k in keys)
        for h in range(H):
            s = slice(h * d, (h + 1) * d)
            out[MatrixId(layer, Kind.QK, h)] = wq[s, :].T @ wk[s, :]
            out[MatrixId(layer, Kind.V, h)] = wv[s, :].T @ wo.T[s, :]
        out[MatrixId(layer, Kind.M_IN)] = w_int.T
        out[MatrixId(layer, Kind.M_OUT)] = w_out.T
    return {key: (m, np.linalg.svd(m, compute_uv=False)) for key, m in out.items()}


def assert_profile_matches(profile: SpectralProfile, reference: dict[MatrixId, tuple[np.ndarray, np.ndarray]]) -> None:
    assert len(reference) == profile.shape.num_matrices
    for i, matrix in enumerate(profile.ids):
        dense, sv = reference[matrix]
        ours = profile.singular_values_of(matrix)
        assert ours.shape == sv.shape, matrix.label
        np.testing.assert_allclose(ours, sv, rtol=0, atol=1e-9 * sv[0], err_msg=matrix.label)
        np.testing.assert_allclose(profile.norm_21[i], np.linalg.norm(dense, axis=0).sum(), rtol=1e-12)
        np.testing.assert_allclose(profile.norm_11[i], np.abs(dense).sum(), rtol=1e-12)


def reload_state(directory: Path) -> dict[str, Any]:
    import transformers

    state: dict[str, Any] = transformers.AutoModel.from_pretrained(directory).state_dict()
    return state


# --- loading ------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert"])
@pytest.mark.parametrize("safe", [True, False], ids=["safetensors", "pytorch"])
def test_checkpoint_loads_with_its_shape_and_exact_spectra(
    make_checkpoint: MakeCheckpoint, family: str, safe: bool
) -> None:
    directory = make_checkpoint(family, layers=2, hidden=32, heads=4, ffn=48, safe=safe)
    expected_file = "model.safetensors" if safe else "pytorch_model.bin"
    assert [p.name for p in weight_files(directory)] == [expected_file]

    checkpoint = open_checkpoint(directory)
    assert checkpoint.shape == ModelShape(num_layers=2, hidden_size=32, num_heads=4, ffn_size=48, family=family)
    assert checkpoint.shape.head_dim == 8
    assert checkpoint.shape.num_matrices == 20

    profile = load_profile(str(directory), use_cache=False)
    assert profile.model == str(directory.resolve())
    assert profile.revision == fingerprint(directory)
    root, keys = ("transformer.layer", DISTIL_KEYS) if family == "distilbert" else ("encoder.layer", BERT_KEYS)
    assert_profile_matches(profile, dense_reference(reload_state(directory), profile.shape, root, keys))
    # random init: every QK and V has full head rank d, the feed-forward matrices rank N
    assert profile.rank.tolist() == ([8] * 8 + [32, 32]) * 2


def test_pytorch_and_safetensors_formats_give_the_same_profile(make_checkpoint: MakeCheckpoint) -> None:
    safe = load_profile(str(make_checkpoint(seed=3, name="st")), use_cache=False)
    pickle = load_profile(str(make_checkpoint(seed=3, safe=False, name="pt")), use_cache=False)
    np.testing.assert_array_equal(safe.singular_values, pickle.singular_values)
    np.testing.assert_array_equal(safe.norm_21, pickle.norm_21)


def test_sharded_safetensors_checkpoint_loads(tmp_path: Path) -> None:

    model = tiny_model(layers=3, seed=1)
    save_model(model, tmp_path, max_shard_size="20KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) > 1 and not (tmp_path / "model.safetensors").exists()
    assert [p.name for p in weight_files(tmp_path)] == shards

    profile = load_profile(str(tmp_path), use_cache=False)
    assert profile.shape == ModelShape(3, 32, 4, 48)
    assert_profile_matches(profile, dense_reference(model.state_dict(), profile.shape, "encoder.layer", BERT_KEYS))


def test_prefixed_keys_of_a_masked_lm_head_checkpoint_load(tmp_path: Path) -> None:

    model = tiny_model(heads=2, ffn=40, seed=2, head="BertForMaskedLM")
    save_model(model, tmp_path)
    from safetensors import safe_open

    with safe_open(str(tmp_path / "model.safetensors"), framework="np") as f:
        names = list(f.keys())
    assert "bert.encoder.layer.0.attention.self.query.weight" in names
    assert not any(n.startswith("encoder.") for n in names)

    profile = load_profile(str(tmp_path), use_cache=False)
    assert profile.shape == ModelShape(2, 32, 2, 40)
    assert profile.rank.tolist() == ([16] * 4 + [32, 32]) * 2
    reference = dense_reference(model.bert.state_dict(), profile.shape, "encoder.layer", BERT_KEYS)
    assert_profile_matches(profile, reference)


def test_layers_are_read_one_at_a_time_as_float64(make_checkpoint: MakeCheckpoint) -> None:
    checkpoint = open_checkpoint(make_checkpoint(layers=3))
    layers = checkpoint.layers()
    first = next(layers)
    assert first.ffn_in is not None and first.ffn_out is not None
    assert first.query.dtype == np.float64 and first.ffn_in.shape == (48, 32) and first.ffn_out.shape == (32, 48)
    assert len(list(layers)) == 2


# --- the bundled, trained MiniLM ------------------------------------------------------------------


def test_bundled_minilm_profile() -> None:
    from safetensors.numpy import load_file

    from specbound.io.models import bundled_model_dir

    profile = load_profile("minilm-l6")
    shape = profile.shape
    assert shape == ModelShape(num_layers=6, hidden_size=384, num_heads=12, ffn_size=1536)
    assert shape.head_dim == 32 and shape.num_matrices == 156 and len(profile.ids) == 156
    for kind, rank in ((Kind.QK, 32), (Kind.V, 32), (Kind.M_IN, 384), (Kind.M_OUT, 384)):
        assert profile.rank[profile.mask(kind)].tolist() == [rank] * int(profile.mask(kind).sum()), kind
    # only the first d = 32 singular values of a QK or V matrix can be nonzero
    qkv = profile.mask(Kind.QK) | profile.mask(Kind.V)
    assert np.all(profile.singular_values[qkv, 32:] == 0.0)

    weights = load_file(str(bundled_model_dir() / "model.safetensors"))
    prefix = "" if "encoder.layer.0.attention.self.query.weight" in weights else "bert."

    def w(layer: int, key: str) -> np.ndarray:
        return weights[f"{prefix}encoder.layer.{layer}.{key}"].astype(np.float64)

    s = slice(5 * 32, 6 * 32)
    picks = {
        MatrixId(0, Kind.QK, 5): w(0, BERT_KEYS[0])[s].T @ w(0, BERT_KEYS[1])[s],
        MatrixId(3, Kind.V, 5): w(3, BERT_KEYS[2])[s].T @ w(3, BERT_KEYS[3]).T[s],
        MatrixId(5, Kind.M_IN): w(5, BERT_KEYS[4]).T,
        MatrixId(2, Kind.M_OUT): w(2, BERT_KEYS[5]).T,
    }
    for matrix, dense in picks.items():
        sv = np.linalg.svd(dense, compute_uv=False)
        np.testing.assert_allclose(
            profile.singular_values_of(matrix), sv, rtol=0, atol=1e-9 * sv[0], err_msg=matrix.label
        )
        np.testing.assert_allclose(
            profile.norm_21[profile.index(matrix)], np.linalg.norm(dense, axis=0).sum(), rtol=1e-12
        )


# --- bad checkpoints (SPEC §8; the builders are in bad_checkpoints.py) ---------------------------


@pytest.mark.parametrize("case", list(BAD_CHECKPOINTS))
def test_bad_checkpoint_gives_its_specific_error(make_checkpoint: MakeCheckpoint, case: str) -> None:
    spoil, error, words = BAD_CHECKPOINTS[case]
    directory = make_checkpoint()
    spoil(directory)
    with pytest.raises(error) as info:
        load_profile(str(directory))
    message = str(info.value)
    for word in words:
        assert word in message
    assert "\n" not in message


def test_corrupt_pytorch_zip_archive(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint(safe=False)
    data = (directory / "pytorch_model.bin").read_bytes()
    (directory / "pytorch_model.bin").write_bytes(data[: len(data) // 3])
    with pytest.raises(CheckpointError, match=r"cannot read pytorch_model\.bin: corrupt, or not a weights-only"):
        load_profile(str(directory))


def test_bad_shard_index(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint()
    (directory / "model.safetensors").unlink()
    (directory / "model.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(CheckpointError, match=r"cannot read the shard index model\.safetensors\.index\.json"):
        load_profile(str(directory))


def test_zero_query_weight_gives_rank_zero_and_zero_contribution(make_checkpoint: MakeCheckpoint) -> None:
    import torch

    from specbound import BoundAnalysis

    directory = make_checkpoint()

    def edit(state: dict[str, torch.Tensor]) -> None:
        state["encoder.layer.0.attention.self.query.weight"] = torch.zeros(32, 32)

    edit_weights(directory, edit)

    profile = load_profile(str(directory))
    zero = profile.mask(Kind.QK) & (profile.layers == 0)
    assert profile.rank[zero].tolist() == [0, 0, 0, 0]
    assert np.all(profile.singular_values[zero] == 0.0)
    assert np.all(profile.norm_21[zero] == 0.0) and np.all(profile.norm_11[zero] == 0.0)
    assert profile.rank[~zero].tolist() == [8] * 4 + [32, 32] + ([8] * 8 + [32, 32])

    analysis = BoundAnalysis.from_profile(profile)
    for p in (None, 0.0, 0.5, 1.0, 2.0):
        terms = analysis.evaluate(p)
        assert np.all(terms.contribution[zero] == 0.0)
        assert np.all(terms.contribution[~zero] > 0.0)
        assert np.isfinite(terms.total)
    assert np.isfinite(analysis.edelman)
    # p* of a zero matrix: every p gives c = 0, and ties go to the smallest p
    assert analysis.p_opt[zero].tolist() == [0.0] * 4
