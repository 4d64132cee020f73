"""The bound centred at a reference (SPEC §14): the spectra of W - W⁰, the scales of W.

Checked against a dense computation written here, not through specbound's factored route: for every
head, expert and stack matrix the dense products of both checkpoints (read by the family adapters,
whose readings the family tests check against transformers' own modules) are subtracted and passed
to LAPACK's SVD; the centred contribution is then the SPEC formula with those singular values and
s_W of the uncentred analysis. Tiny fine-tunes of a dense decoder with grouped-query attention
(Llama), GPT-2's fused Conv1D, a mixture of experts (Mixtral) and an encoder-decoder (T5) are built
from transformers' own classes: the base perturbed everywhere except one layer's attention and one
expert, which must come out with rank 0 and contribution 0.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import save_model, transformers_model

import specbound
from specbound.core.architecture import Kind, ModelShape
from specbound.core.bounds import p_grid
from specbound.core.errors import SpecboundWarning
from specbound.core.matrices import LayerWeights, head_rows, mlp_field
from specbound.io.centred import ReferenceMismatchError, check_reference, stacked_attention
from specbound.io.checkpoints import open_checkpoint
from specbound.io.loading import difference_profile, load_profile

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

#: Relative agreement with the dense reference (singular values, contributions).
RTOL = 1e-10

_DECODER = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, pad_token_id=0)
MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(_DECODER, num_key_value_heads=2, intermediate_size=48)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16)),
    "mixtral": (
        "MixtralConfig",
        "MixtralForCausalLM",
        dict(_DECODER, num_key_value_heads=2, intermediate_size=24, num_local_experts=3, num_experts_per_tok=2),
    ),
    "t5": (
        "T5Config",
        "T5ForConditionalGeneration",
        dict(vocab_size=64, d_model=32, d_kv=8, num_heads=4, d_ff=48, num_layers=2, num_decoder_layers=2),
    ),
}
#: Parameters the fine-tune leaves exactly as the base has them (name fragments): one layer's
#: self-attention; in the mixture also expert 1 of layer 1 (:data:`_FROZEN_EXPERT`).
_UNCHANGED = ("layers.0.self_attn", "h.0.attn", "block.0.layer.0")
_FROZEN_EXPERT = ("layers.1.mlp.experts.", 1)  # transformers holds the experts fused: (E, out, in)


def _model(name: str, seed: int) -> Any:
    config_class, model_class, fields = MODELS[name]
    return transformers_model(config_class, model_class, fields, seed=seed, dtype="float64")


def _fine_tune(base: Any, name: str, seed: int = 1) -> Any:
    """A copy of ``base`` with every 2-D weight moved by noise, except those of :data:`_UNCHANGED`."""
    tuned = _model(name, 0)
    tuned.load_state_dict(base.state_dict())
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for key, parameter in tuned.named_parameters():
            if parameter.ndim >= 2 and not any(fragment in key for fragment in _UNCHANGED):
                noise = 0.05 * torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
                if parameter.ndim == 3 and _FROZEN_EXPERT[0] in key:
                    noise[_FROZEN_EXPERT[1]] = 0.0
                parameter.add_(noise)
    return tuned


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """name -> (fine-tune directory, base directory), saved by transformers in float64."""
    root = tmp_path_factory.mktemp("centred")
    saved = {}
    for name in MODELS:
        base = _model(name, 0)
        tuned = _fine_tune(base, name)
        save_model(base, root / f"{name}-base")
        save_model(tuned, root / f"{name}-tuned")
        saved[name] = (root / f"{name}-tuned", root / f"{name}-base")
    return saved


def _dense_heads(weights: tuple[np.ndarray, ...], shape: ModelShape) -> list[tuple[np.ndarray, np.ndarray]]:
    """(QK_h, V_h) of every query head, formed densely: query head h reads key/value head h // (H / H_kv)."""
    q, k, v, o = weights
    d, group = shape.head_dim, shape.num_heads // shape.num_kv_heads
    heads = []
    for h in range(shape.num_heads):
        s, g = slice(h * d, (h + 1) * d), slice(h // group * d, (h // group + 1) * d)
        heads.append((q[s].T @ k[g], v[g].T @ o[:, s].T))
    return heads


def dense_difference(tuned: Path, base: Path) -> list[np.ndarray]:
    """Every proxy matrix's W - W⁰ formed densely, in profile order."""
    a, b = open_checkpoint(tuned), open_checkpoint(base)
    shape = a.shape
    matrices: list[np.ndarray] = []
    for layer in range(shape.num_layers):
        wa, wb = a.layer(layer), b.layer(layer)
        attentions = [(wa.attention_weights(), wb.attention_weights())]
        if shape.has_cross(layer):
            cross_a, cross_b = wa.cross_attention_weights(), wb.cross_attention_weights()
            assert cross_a is not None and cross_b is not None
            attentions.append((cross_a, cross_b))
        for ours, theirs in attentions:
            pairs = list(zip(_dense_heads(ours, shape), _dense_heads(theirs, shape), strict=True))
            matrices += [x[0] - y[0] for x, y in pairs] + [x[1] - y[1] for x, y in pairs]
        for expert in shape.experts:
            for kind in shape.layer_kinds:
                field = mlp_field(kind, expert)
                matrices.append((wa.mlp_weight(field) - wb.mlp_weight(field)).T)
    return matrices


def _reference_contribution(sv: np.ndarray, log_scale: float, shape: ModelShape, m: int) -> tuple[float, float]:
    """(p*, c_ref(W; p*)) of SPEC §14 from dense singular values: the rank threshold of §3, k = min(rows, cols)."""
    n = shape.hidden_size
    counted = sv[sv > 1e-10 * min(len(sv), n) * max(sv[0], 1.0)] if len(sv) else sv
    best = (math.inf, 0.0)
    for p in p_grid(m):
        s_p = float(len(counted)) if p == 0 else float(np.sum(counted**p))
        if s_p == 0.0:
            return 0.0, 0.0
        log_c = (math.log(s_p) + p * log_scale + (p + 1) * math.log(n)) / (p + 2)
        if log_c < best[0] - 1e-12:
            best = (log_c, p)
    return best[1], math.exp(best[0])


@pytest.mark.parametrize("name", MODELS)
def test_every_difference_equals_a_dense_computation(pairs: dict[str, tuple[Path, Path]], name: str) -> None:
    tuned, base = pairs[name]
    analysis = specbound.analyze(str(tuned), base=str(base), use_cache=False)
    centred, shape = analysis.centred, analysis.shape
    assert centred is not None and analysis.reference is not None
    assert analysis.reference.adaptation == "centred at the base"
    delta = centred.schatten_profile
    dense = dense_difference(tuned, base)
    assert len(dense) == shape.num_matrices
    unchanged = 0
    for i, matrix in enumerate(dense):
        reference = np.linalg.svd(matrix, compute_uv=False)
        ours = delta.singular_values[i][: len(reference)]
        scale = max(reference[0], 1e-300)
        assert np.max(np.abs(ours - reference)) <= RTOL * max(scale, 1e-12), (name, delta.ids[i].label)
        p_star, contribution = _reference_contribution(reference, centred.log_scale[i], shape, centred.grid_m)
        assert centred.p_opt[i] == pytest.approx(p_star, abs=1e-12), delta.ids[i].label
        assert centred.optimal.contribution[i] == pytest.approx(contribution, rel=RTOL, abs=1e-300)
        if not matrix.any():
            unchanged += 1
            assert delta.rank[i] == 0 and delta.spectral_norm[i] == 0.0 and centred.optimal.contribution[i] == 0.0
    assert unchanged >= 2 * shape.num_heads or (name == "gpt2" and unchanged >= shape.num_heads)  # the frozen ones
    # the scales are those of the actual weights: the uncentred analysis's, matrix for matrix
    np.testing.assert_array_equal(centred.log_scale, analysis.bounds.log_scale)
    total = math.sqrt(shape.num_layers) + sum(
        _reference_contribution(np.linalg.svd(m, compute_uv=False), centred.log_scale[i], shape, centred.grid_m)[1]
        for i, m in enumerate(dense)
    )
    assert analysis.ours_centred == pytest.approx(total, rel=RTOL)
    # Edelman's centred proxy takes the (2,1) norm of the difference
    np.testing.assert_allclose(delta.norm_21, [np.linalg.norm(m, axis=0).sum() for m in dense], rtol=RTOL, atol=1e-300)


def test_a_wrong_head_slice_or_sign_would_fail() -> None:
    """The stacked factors give QK_h - QK⁰_h; a sign or a neighbouring head's rows would not."""
    shape = ModelShape(1, 8, 2, 16, num_kv_heads=1)
    rng = np.random.default_rng(3)
    tuned = (rng.normal(size=(8, 8)), rng.normal(size=(4, 8)), rng.normal(size=(4, 8)), rng.normal(size=(8, 8)))
    base = tuple(w + 0.1 * rng.normal(size=w.shape) for w in tuned)
    q, k, v, o = stacked_attention(tuned, base, shape)
    for h in range(2):
        qk = head_rows(q, 2)[h].T @ head_rows(k, 1)[0]
        vh = head_rows(v, 1)[0].T @ head_rows(o.T, 2)[h]
        want = _dense_heads(tuned, shape)[h]
        have = _dense_heads(base, shape)[h]
        np.testing.assert_allclose(qk, want[0] - have[0], atol=1e-12)
        np.testing.assert_allclose(vh, want[1] - have[1], atol=1e-12)
        assert not np.allclose(qk, want[0] + have[0], atol=1e-3)
        other = _dense_heads(tuned, shape)[1 - h][0] - _dense_heads(base, shape)[1 - h][0]
        assert not np.allclose(qk, other, atol=1e-3)


def test_the_command_line_against_itself_gives_sqrt_depth(pairs: dict[str, tuple[Path, Path]]) -> None:
    from cli_runner import cli, strict_json

    tuned, _ = pairs["t5"]
    data = strict_json(cli("analyze", str(tuned), "--base", str(tuned), "--json", "--no-cache").stdout)
    assert data["proxies"]["ours_centred"] == math.sqrt(data["num_layers"])
    assert all(m["delta"]["rank"] == 0 and m["delta"]["contribution"] == 0.0 for m in data["matrices"])
    # unchanged: no intruders and overlap 1 by definition (SPEC §14b)
    assert all(m["delta"]["intruders"] == 0 and m["delta"]["overlap_left"] == 1.0 for m in data["matrices"])
    assert data["reference"]["kind"] == "base" and data["adaptations"][-1] == "centred at the base"
    text = cli("analyze", str(tuned), "--base", str(tuned), "--no-cache").stdout
    assert f"0 of {len(data['matrices'])} matrices differ from the reference" in text
    assert "intruder dimensions (top k=10 left singular vectors with |cos| < 0.5" in text
    assert "'s): 0 in 0 matrices" in text


def test_the_command_line_sets_the_intruders_k_and_eps(pairs: dict[str, tuple[Path, Path]]) -> None:
    from cli_runner import assert_one_line_error, cli, strict_json

    tuned, base = pairs["llama"]
    args = ("analyze", str(tuned), "--base", str(base), "--json", "--no-cache")
    data = strict_json(cli(*args, "--intruder-k", "3", "--intruder-eps", "0.9").stdout)
    assert data["directions"]["k"] == 3 and data["directions"]["eps"] == 0.9
    assert max(m["delta"]["top_k"] for m in data["matrices"]) == 3
    api = specbound.analyze(str(tuned), base=str(base), use_cache=False, intruder_k=3, intruder_eps=0.9)
    assert api.directions is not None
    assert [m["delta"]["intruders"] for m in data["matrices"]] == api.directions.intruders.tolist()
    assert_one_line_error(cli(*args, "--intruder-eps", "1.5"), "eps must be a number in (0, 1]", status=2)
    assert_one_line_error(cli(*args, "--intruder-k", "0"), "k must be an integer from 1", status=2)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        specbound.analyze(str(tuned), base=str(base), use_cache=False, intruder_k=0)


def test_the_singular_vectors_comparison_can_be_skipped_and_nothing_else_changes(
    pairs: dict[str, tuple[Path, Path]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``directions=False`` / ``--no-directions`` skip the comparison of singular vectors (it never runs:
    its entry point raises here) and leave every centred number as it is with the comparison."""
    from cli_runner import assert_one_line_error, cli, strict_json

    tuned, base = pairs["llama"]
    full = specbound.analyze(str(tuned), base=str(base), use_cache=False)
    args = ("analyze", str(tuned), "--base", str(base), "--no-cache")
    with_vectors = strict_json(cli(*args, "--json").stdout)

    def never(*_: Any, **__: Any) -> None:
        raise AssertionError("the singular vectors were compared")

    monkeypatch.setattr("specbound.io.centred.directions_of", never)
    monkeypatch.setattr("specbound.api.analysis.directions_of", never)
    skipped = specbound.analyze(str(tuned), base=str(base), use_cache=False, directions=False)
    assert skipped.directions is None and full.directions is not None
    assert skipped.ours_centred == full.ours_centred and skipped.edelman_centred == full.edelman_centred
    frame, complete = skipped.to_frame(), full.to_frame()
    assert "delta_intruders" in complete.columns and "delta_intruders" not in frame.columns
    for column in frame.columns:  # every other column, the centred ones included, as with the comparison
        assert frame[column].equals(complete[column]), column
    data = strict_json(cli(*args, "--json", "--no-directions").stdout)
    assert "directions" in with_vectors and "directions" not in data
    assert all("intruders" not in m["delta"] for m in data["matrices"])
    assert data["proxies"] == with_vectors["proxies"]
    assert [m["delta"]["contribution"] for m in data["matrices"]] == [
        m["delta"]["contribution"] for m in with_vectors["matrices"]
    ]
    assert "intruder dimensions: not compared (--no-directions)" in cli(*args, "--no-directions").stdout
    out = tmp_path / "export"
    assert cli("export", str(tuned), "--base", str(base), "--out", str(out), "--no-directions").returncode == 0
    assert "delta_contribution" in (out / "matrices.csv").read_text().splitlines()[0]
    assert_one_line_error(cli(*args, "--no-directions", "--intruder-k", "3"), "--no-directions skips", status=2)
    with pytest.raises(ValueError, match="directions=False skips"):
        specbound.analyze(str(tuned), base=str(base), use_cache=False, directions=False, intruder_eps=0.9)


def test_a_model_against_itself_changes_nothing(pairs: dict[str, tuple[Path, Path]]) -> None:
    tuned, _ = pairs["llama"]
    analysis = specbound.analyze(str(tuned), base=str(tuned), use_cache=False)
    assert analysis.centred is not None
    delta = analysis.centred.schatten_profile
    assert (delta.rank == 0).all() and (delta.singular_values == 0).all() and (delta.norm_21 == 0).all()
    assert analysis.ours_centred == math.sqrt(analysis.shape.num_layers)
    assert analysis.edelman_centred == 1.0  # (1 + Σ α^(2/3) ξ)^(3/2) with every ξ = 0
    assert analysis.ours_centred < analysis.ours


def test_the_streamed_block_difference_equals_the_whole_one(
    pairs: dict[str, tuple[Path, Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory-mapped feed-forward pair is subtracted block by block (neither held whole): the same spectra."""
    import specbound.core.engine as engine

    tuned, base = (open_checkpoint(p) for p in pairs["llama"])
    whole = difference_profile(tuned, base, model="whole")
    monkeypatch.setattr(engine, "MAPPED_MATRIX_BYTES", 0)
    monkeypatch.setattr(engine, "PRODUCT_BLOCK_BYTES", 8 * 32 * 5)  # blocks of 5 columns
    blocked = difference_profile(tuned, base, model="blocked")
    mlp = np.isin(whole.kinds, [k.value for k in (Kind.M_GATE, Kind.M_IN, Kind.M_OUT)])
    np.testing.assert_allclose(blocked.singular_values[mlp], whole.singular_values[mlp], rtol=0, atol=1e-12)
    np.testing.assert_allclose(blocked.norm_21, whole.norm_21, rtol=1e-13)


def test_a_reference_that_does_not_match_is_refused_naming_the_difference(
    pairs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    tuned, _ = pairs["llama"]
    other = _model("llama", 0)
    other.config.num_key_value_heads = 4
    wider = transformers.LlamaForCausalLM(other.config)
    save_model(wider, tmp_path / "four-kv")
    with pytest.raises(ReferenceMismatchError, match="num_kv_heads is 4 there and 2 here"):
        specbound.analyze(str(tuned), base=str(tmp_path / "four-kv"), use_cache=False)
    with pytest.raises(ReferenceMismatchError, match=r"gpt2 model and .* a llama one"):
        specbound.analyze(str(tuned), base=str(pairs["gpt2"][1]), use_cache=False)


def test_a_reference_is_checked_on_its_family_and_dimensions_only(
    pairs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """The manual promises family and dimensions: a base differing in the initialisation's σ (which
    only the random twin reads) or in the activation still has every W⁰, and is taken; the centred
    numbers are those of the same base with the model's own config."""
    tuned, base = pairs["llama"]
    model = transformers.LlamaForCausalLM.from_pretrained(base)
    model.config.initializer_range, model.config.hidden_act = 0.05, "gelu"
    save_model(model, tmp_path / "other-sigma")
    other = specbound.analyze(str(tuned), base=str(tmp_path / "other-sigma"), use_cache=False)
    same = specbound.analyze(str(tuned), base=str(base), use_cache=False)
    assert other.ours_centred == pytest.approx(same.ours_centred, rel=1e-12)
    wider = ModelShape(2, 32, 4, 48, num_kv_heads=2, initializer_range=0.05, activation="gelu", family="llama")
    narrower = dataclasses.replace(wider, ffn_size=40)
    with pytest.raises(ReferenceMismatchError, match=r"^the base cannot be the reference of the model: ffn_size is 40"):
        check_reference(wider, narrower, "the model", "the base")


def test_another_storage_type_warns_once_with_the_rounding(pairs: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    _tuned, base = pairs["llama"]
    model = transformers.LlamaForCausalLM.from_pretrained(base).to(torch.bfloat16)
    save_model(model, tmp_path / "bf16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        specbound.analyze(str(tmp_path / "bf16"), base=str(base), use_cache=False)
    found = [w for w in caught if issubclass(w.category, SpecboundWarning)]
    assert len(found) == 1
    assert "BF16" in str(found[0].message) and "F64" in str(found[0].message) and "0.0039" in str(found[0].message)
    with warnings.catch_warnings(record=True) as caught:  # the other way round nothing was rounded
        warnings.simplefilter("always")
        specbound.analyze(str(base), base=str(tmp_path / "bf16"), use_cache=False)
    assert not [w for w in caught if issubclass(w.category, SpecboundWarning)]


def test_the_frames_and_json_carry_the_difference(pairs: dict[str, tuple[Path, Path]]) -> None:
    tuned, base = pairs["mixtral"]
    analysis = specbound.analyze(str(tuned), base=str(base), use_cache=False)
    frame = analysis.to_frame()
    assert analysis.centred is not None
    delta = analysis.centred.schatten_profile
    np.testing.assert_array_equal(frame["delta_rank"], delta.rank)
    np.testing.assert_array_equal(frame["delta_contribution"], analysis.centred.optimal.contribution)
    data = analysis.to_dict()
    assert data["reference"] == {"model": str(base), "kind": "base", "adaptation": "centred at the base"}
    assert "centred at the base" in data["adaptations"]
    assert data["proxies"]["ours_centred"] == pytest.approx(analysis.ours_centred, rel=1e-15)
    assert data["proxies"]["edelman_centred_log10"] == pytest.approx(analysis.edelman_centred_log10, rel=1e-15)
    first = data["matrices"][0]["delta"]
    schatten = {"rank", "spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21", "p_opt", "contribution"}
    vectors = {"intruders", "min_cosine", "overlap_left", "overlap_right", "chance_cosine", "near_tie", "top_k"}
    assert set(first) == schatten | vectors  # SPEC §14b's fields beside §14's
    assert [m["delta"]["rank"] for m in data["matrices"]] == delta.rank.tolist()
    assert analysis.directions is not None
    assert [m["delta"]["intruders"] for m in data["matrices"]] == analysis.directions.intruders.tolist()
    assert {f"delta_{name}" for name in vectors} <= set(frame.columns)
    expert = next(m for m in data["matrices"] if m.get("expert") == 1 and m["layer"] == 1)
    assert expert["delta"]["rank"] == 0 and expert["delta"]["contribution"] == 0.0  # the frozen expert
    frozen = expert["delta"]
    assert (frozen["intruders"], frozen["min_cosine"], frozen["overlap_left"], frozen["overlap_right"]) == (0, 1, 1, 1)
    assert data["directions"]["k"] == 10 and data["directions"]["eps"] == 0.5  # peft's defaults


def test_without_a_base_nothing_is_centred(pairs: dict[str, tuple[Path, Path]]) -> None:
    analysis = specbound.analyze(str(pairs["gpt2"][0]), use_cache=False)
    assert analysis.centred is None and "reference" not in analysis.to_dict()
    with pytest.raises(ValueError, match="no reference"):
        _ = analysis.ours_centred


def test_a_base_in_memory_equals_the_same_base_on_disk(pairs: dict[str, tuple[Path, Path]]) -> None:
    tuned, base = pairs["t5"]
    on_disk = specbound.analyze(str(tuned), base=str(base), use_cache=False)
    in_memory = specbound.analyze(
        transformers.T5ForConditionalGeneration.from_pretrained(tuned).to(torch.float64),
        base=transformers.T5ForConditionalGeneration.from_pretrained(base).to(torch.float64),
    )
    assert in_memory.ours_centred == pytest.approx(on_disk.ours_centred, rel=1e-12)
    assert in_memory.centred is not None and on_disk.centred is not None
    np.testing.assert_array_equal(in_memory.centred.schatten_profile.rank, on_disk.centred.schatten_profile.rank)


def test_an_atlas_member_cannot_be_a_reference(pairs: dict[str, tuple[Path, Path]], tmp_path: Path) -> None:
    from specbound.core.errors import CheckpointError
    from specbound.io.atlas import save_atlas

    profile = load_profile(str(pairs["gpt2"][1]), use_cache=False)
    save_atlas([profile], tmp_path / "a.npz")
    with pytest.raises(CheckpointError, match="atlas stores spectra, not weights"):
        specbound.analyze(str(pairs["gpt2"][0]), base=f"atlas:{tmp_path / 'a.npz'}#{profile.model}", use_cache=False)


def test_layer_weights_are_a_layer_source() -> None:
    """The in-memory layer reads like a streamed one (the protocol the difference layers wrap)."""
    shape = ModelShape(1, 4, 2, 8)
    rng = np.random.default_rng(0)
    query, key, value, out = (rng.normal(size=(4, 4)) for _ in range(4))
    weights = LayerWeights(query, key, value, out, ffn_in=rng.normal(size=(8, 4)), ffn_out=rng.normal(size=(4, 8)))
    assert weights.mlp_mapped("ffn_in") is None  # type: ignore[func-returns-value]  # the None it promises
    assert len(stacked_attention(weights.attention_weights(), weights.attention_weights(), shape)) == 4
