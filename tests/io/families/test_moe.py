"""Mixtures of experts (SPEC §12): Mixtral, Qwen2-MoE, Qwen3-MoE and OLMoE, read and checked against
the Hugging Face modules' own forward pass.

Tiny random models are built from transformers' own classes in float64 and written with its own
``save_pretrained`` (which stores one tensor per expert, as the Hub does), sharded and as ``.bin`` too.
Checked here:

* every expert's M_gate, M_in, M_out computes that expert's module output: transformers' fused
  experts called with every token routed to expert e alone at weight 1 give
  (φ(x M_gate^e) ⊙ x M_in^e) M_out^e, and the shared expert's module gives the shared matrices';
  an expert index off by one, or gate and up swapped, fails the same check;
* QK_h and V_h against the attention's logits and output (rotation at offset 0, the QK norms left
  out as the adaptation says);
* the model held in memory (experts fused, ``mlp.experts.gate_up_proj``) reads exactly as its saved
  directory, every matrix with its ``"expert"``;
* the MoE Φ in closed form on a hand-built profile (the largest expert's ν ‖M_out‖, plus the shared
  expert's), and the counts and fields of §12 (L (2H + 3E [+ 3]) matrices, ``num_experts``, ...).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from family_models import save_each
from hand_profiles import make_profile
from tiny_models import save_model, transformers_model

import specbound
from specbound.core.architecture import SHARED_EXPERT, Adaptation, Kind, Mlp, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.errors import UnsupportedModelError
from specbound.core.matrices import LayerWeights, attention_heads, mlp_field
from specbound.core.profile import MatrixId
from specbound.io.checkpoints import Checkpoint, open_checkpoint

if TYPE_CHECKING:
    import torch

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

#: The tiny models: 2 layers, N = 32, 4 query heads on 2 key/value heads of d = 8, 4 experts (top 2).
_COMMON = dict(
    vocab_size=64,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=8,
    num_experts_per_tok=2,
    initializer_range=0.2,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(intermediate_size=48, num_local_experts=4)),
    "qwen2_moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        dict(intermediate_size=40, moe_intermediate_size=24, num_experts=4, shared_expert_intermediate_size=40),
    ),
    "qwen3_moe": (
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        dict(intermediate_size=40, moe_intermediate_size=24, num_experts=4),
    ),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", dict(intermediate_size=48, num_experts=4)),
}
EXPECTED = {  # (E, d_ff of an expert, d_ff of the shared expert or 0, extra adaptations)
    "mixtral": (4, 48, 0, ()),
    "qwen2_moe": (4, 24, 40, ()),
    "qwen3_moe": (4, 24, 0, (Adaptation.QK_NORM,)),
    "olmoe": (4, 48, 0, (Adaptation.QK_NORM,)),
}
RIGHT, WRONG = 1e-10, 1e-2


def make_model(name: str) -> Any:
    config_class, model_class, extra = FAMILIES[name]
    # eager attention, and the loop over experts (grouped GEMMs refuse float64)
    eager = {"_attn_implementation": "eager", "_experts_implementation": "eager"}
    seed = sorted(FAMILIES).index(name)
    model = transformers_model(
        config_class, model_class, {**_COMMON, **extra}, seed=seed, dtype="float64", set_after=eager
    )
    model.eval()
    with torch.no_grad():  # scale the weights so that every matrix has a spectrum worth reading
        for parameter in model.parameters():
            if parameter.ndim >= 2:
                parameter.normal_(0.0, 0.2)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Path]]:
    return save_each(make_model, FAMILIES, tmp_path_factory.mktemp("moe"))


# --- shape, counts and JSON fields ----------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_shape_counts_and_json_fields(saved: dict[str, tuple[Any, Path]], name: str) -> None:
    _, directory = saved[name]
    experts, ffn, shared, extra = EXPECTED[name]
    analysis = specbound.analyze(directory, use_cache=False)
    shape = analysis.shape
    assert (shape.num_experts, shape.experts_per_token, shape.ffn_size, shape.shared_expert_size) == (
        experts,
        2,
        ffn,
        shared,
    )
    assert shape.mlp is Mlp.GATED
    assert Adaptation.ROUTER_FIXED in shape.adaptations and set(extra) <= set(shape.adaptations)
    units = experts + (1 if shared else 0)
    assert shape.num_matrices == 2 * (2 * 4 + 3 * units)  # L (2H + 3E [+ 3])
    data = json.loads(analysis.to_json())
    assert (data["num_experts"], data["experts_per_token"]) == (experts, 2)
    assert data["shared_expert_size"] == (shared or None)
    mlp = [m for m in data["matrices"] if m["head"] is None]
    assert [m["expert"] for m in mlp[: 3 * units]] == [
        e for e in [*range(experts), *([SHARED_EXPERT] if shared else [])] for _ in range(3)
    ]
    assert all(m["expert"] is None for m in data["matrices"] if m["head"] is not None)
    # each expert's M_in has rank min(N, d_ff) (Gaussian weights) and its own full dimension
    for matrix in analysis.profile.ids:
        if matrix.kind is Kind.M_IN:
            i = analysis.profile.index(matrix)
            assert analysis.profile.full_dims[i] == min(32, shape.expert_ffn_size(matrix.expert))
            assert analysis.profile.rank[i] == min(32, shape.expert_ffn_size(matrix.expert))


@pytest.mark.parametrize("name", FAMILIES)
def test_model_in_memory_equals_its_directory(saved: dict[str, tuple[Any, Path]], name: str) -> None:
    model, directory = saved[name]
    assert any("experts.gate_up_proj" in key for key in model.state_dict())  # transformers holds them fused
    on_disk = specbound.analyze(directory, use_cache=False).profile
    in_memory = specbound.analyze(model, use_cache=False).profile
    assert in_memory.shape == on_disk.shape
    np.testing.assert_allclose(in_memory.singular_values, on_disk.singular_values, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(in_memory.norm_21, on_disk.norm_21, rtol=1e-12)
    assert in_memory.ids == on_disk.ids


def test_sharded_and_bin_checkpoints_read_as_one_file(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    model, directory = saved["mixtral"]
    save_model(model, tmp_path / "sharded", max_shard_size="20KB")
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) > 2
    save_model(model, tmp_path / "bin", safe=False)
    reference = specbound.analyze(directory, use_cache=False).profile.singular_values
    for variant in ("sharded", "bin"):
        profile = specbound.analyze(tmp_path / variant, use_cache=False).profile
        np.testing.assert_allclose(profile.singular_values, reference, rtol=1e-12, atol=1e-14)


# --- functional parity with the Hugging Face modules ---------------------------------------------


def _expert_matrices(weights: LayerWeights, expert: Any) -> dict[Kind, np.ndarray]:
    """Row-vector M_gate, M_in, M_out of one expert, as specbound reads them."""
    return {kind: weights.mlp_weight(mlp_field(kind, expert)).T for kind in (Kind.M_GATE, Kind.M_IN, Kind.M_OUT)}


def _gated(x: np.ndarray, m: dict[Kind, np.ndarray]) -> np.ndarray:
    gate = x @ m[Kind.M_GATE]
    out: np.ndarray = (gate / (1.0 + np.exp(-gate)) * (x @ m[Kind.M_IN])) @ m[Kind.M_OUT]  # SiLU gate
    return out


def _relative(predicted: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm(predicted - reference) / np.linalg.norm(reference))


def _expert_output(block: Any, x: np.ndarray, expert: int) -> np.ndarray:
    """transformers' fused experts with every token routed to ``expert`` alone, at weight 1."""
    tokens = torch.from_numpy(x)
    index = torch.full((len(x), 1), expert, dtype=torch.long)
    with torch.no_grad():
        out: np.ndarray = block.experts(tokens, index, torch.ones(len(x), 1, dtype=torch.float64)).numpy()
    return out


@pytest.mark.parametrize("name", FAMILIES)
def test_every_expert_reproduces_its_module_and_wrong_readings_fail(
    saved: dict[str, tuple[Any, Path]], name: str
) -> None:
    model, directory = saved[name]
    checkpoint = open_checkpoint(directory)
    x = np.random.default_rng(0).normal(size=(5, 32))
    for layer in range(2):
        weights = checkpoint.layer(layer)
        block = model.model.layers[layer].mlp
        for expert in range(4):
            reference = _expert_output(block, x, expert)
            ours = _expert_matrices(weights, expert)
            assert _relative(_gated(x, ours), reference) < RIGHT
            off_by_one = _expert_matrices(weights, (expert + 1) % 4)
            assert _relative(_gated(x, off_by_one), reference) > WRONG
            swapped = {**ours, Kind.M_GATE: ours[Kind.M_IN], Kind.M_IN: ours[Kind.M_GATE]}
            assert _relative(_gated(x, swapped), reference) > WRONG
        if EXPECTED[name][2]:
            with torch.no_grad():
                reference = block.shared_expert(torch.from_numpy(x)).numpy()
            assert _relative(_gated(x, _expert_matrices(weights, SHARED_EXPERT)), reference) < RIGHT


def _left_out_norms(model: Any) -> None:
    """QK-norm is an adaptation that leaves the norms out: replace them by the identity."""
    for layer in model.model.layers:
        for norm in ("q_norm", "k_norm"):
            if hasattr(layer.self_attn, norm):
                setattr(layer.self_attn, norm, torch.nn.Identity())


@pytest.mark.parametrize("name", FAMILIES)
def test_qk_and_v_reproduce_the_attention_logits_and_output(saved: dict[str, tuple[Any, Path]], name: str) -> None:
    model, directory = saved[name]
    model = make_model(name)  # a fresh copy whose norms may be taken out
    _left_out_norms(model)
    save_model(model, directory.parent / f"{name}-attention")
    checkpoint = open_checkpoint(directory.parent / f"{name}-attention")
    shape = checkpoint.shape
    tokens = 6
    x = np.random.default_rng(1).normal(size=(tokens, 32))
    attention = model.model.layers[0].self_attn
    cos = torch.ones(1, tokens, shape.head_dim, dtype=torch.float64)  # rotation at offset 0
    sin = torch.zeros(1, tokens, shape.head_dim, dtype=torch.float64)
    captured: dict[str, np.ndarray] = {}
    hook = attention.o_proj.register_forward_hook(lambda _m, args, out: captured.update(out=out[0].numpy()))
    with torch.no_grad():
        _, probabilities = attention(torch.from_numpy(x)[None], (cos, sin), attention_mask=None)
    hook.remove()
    probabilities = probabilities[0].numpy()  # (H, T, T)
    qk, v = attention_heads(*checkpoint.layer(0).attention_weights(), shape)
    qk_dense = np.stack([qk.left[qk.left_of[h]] @ qk.right[qk.right_of[h]] for h in range(4)])
    v_dense = np.stack([v.left[v.left_of[h]] @ v.right[v.right_of[h]] for h in range(4)])
    logits = np.log(probabilities)

    def logit_error(matrices: np.ndarray) -> float:
        predicted = attention.scaling * (x @ matrices @ x.T)  # (H, T, T)
        return _relative(predicted - predicted[:, :, :1], logits - logits[:, :, :1])

    def output_error(matrices: np.ndarray) -> float:
        return _relative(sum(probabilities[h] @ x @ matrices[h] for h in range(4)), captured["out"])

    # the eager softmax is taken in float32, which leaves ~1e-7 in the logits
    assert logit_error(qk_dense) < 1e-6 and output_error(v_dense) < RIGHT
    rolled = [1, 2, 3, 0]  # heads rolled by one
    assert logit_error(qk_dense[rolled]) > WRONG and output_error(v_dense[rolled]) > WRONG


# --- the bound's MoE factor in closed form -------------------------------------------------------


def test_moe_phi_is_the_largest_expert_plus_the_shared_one() -> None:
    """One layer, one head (d = N = 2), two routed experts and a shared one, d_ff = 2 each."""
    shape = ModelShape(
        num_layers=2,
        hidden_size=2,
        num_heads=1,
        ffn_size=2,
        mlp=Mlp.GATED,
        num_experts=2,
        experts_per_token=1,
        shared_expert_size=2,
        activation="silu",
    )
    # per layer: QK, V, then (M_gate, M_in, M_out) for expert 0, expert 1, shared
    layer = [[0.5], [2.0], [1.0], [3.0], [2.0], [2.0], [1.0], [1.0], [1.0], [0.5], [4.0]]
    profile = make_profile(shape, layer + layer)
    analysis = BoundAnalysis.from_profile(profile)
    nu = [2 * 1.0 * 3.0, 2 * 2.0 * 1.0, 2 * 1.0 * 0.5]  # 2 ||M_gate|| ||M_in|| per expert
    phi = max(nu[0] * 2.0, nu[1] * 1.0) + nu[2] * 4.0  # max over routed experts, plus the shared one
    attention = 2.0 * (1 + 4 * 0.5)  # ||V|| (1 + 4 ||QK||)
    f = shape.l_phi * phi * attention
    assert math.isclose(analysis.log_alpha[0], math.log(f), rel_tol=1e-12)
    gamma = analysis.gamma[: shape.matrices_per_layer]
    assert math.isclose(gamma[0], 2 * 2.0 * phi, rel_tol=1e-12)  # QK: 2 ||V|| Phi
    assert math.isclose(gamma[1], phi, rel_tol=1e-12)  # V: Phi
    # each expert's own matrices take their local factors from that expert's norms
    np.testing.assert_allclose(gamma[2:5], [2 * 2.0 * 3.0, 2 * 2.0 * 1.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(gamma[5:8], [2 * 1.0 * 1.0, 2 * 1.0 * 2.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(gamma[8:11], [2 * 4.0 * 0.5, 2 * 4.0 * 1.0, 1.0], rtol=1e-12)
    # without the shared expert, the largest routed expert alone
    routed = ModelShape(**{**_fields(shape), "shared_expert_size": 0})
    alone = BoundAnalysis.from_profile(make_profile(routed, (layer[:8]) * 2))
    assert math.isclose(alone.log_alpha[0], math.log(shape.l_phi * max(nu[0] * 2.0, nu[1] * 1.0) * attention))


def _fields(shape: ModelShape) -> dict[str, Any]:
    return {**shape.to_dict(), "mlp": shape.mlp, "adaptations": shape.adaptations}


def test_expert_matrices_are_found_by_expert() -> None:
    shape = ModelShape(2, 8, 2, 4, mlp=Mlp.GATED, num_experts=3, experts_per_token=2, activation="silu")
    profile = make_profile(shape, [[1.0 + i] for i in range(shape.num_matrices)])
    row = profile.index(MatrixId(1, Kind.M_IN, expert=2))
    assert row == shape.matrices_per_layer + 2 * 2 + 2 * 3 + 1
    assert profile.ids[row] == MatrixId(1, Kind.M_IN, expert=2)
    assert profile.per_layer(profile.spectral_norm, Kind.M_IN, expert=2)[1] == profile.spectral_norm[row]
    assert profile.per_expert(profile.spectral_norm, Kind.M_OUT).shape == (2, 3)
    with pytest.raises(IndexError):
        profile.index(MatrixId(0, Kind.M_IN, expert=3))
    with pytest.raises(IndexError):
        profile.index(MatrixId(0, Kind.M_IN))  # a mixture of experts needs the expert
    assert MatrixId(0, Kind.M_OUT, expert=1).label == "L0 M_out e1"
    assert len(profile.rows_of(kinds=[Kind.M_GATE], experts=[0, 2])) == 4


def test_shape_round_trips_and_dense_files_are_unchanged() -> None:
    shape = ModelShape(2, 8, 2, 4, mlp=Mlp.GATED, num_experts=3, experts_per_token=2, shared_expert_size=6)
    assert ModelShape.from_dict(json.loads(json.dumps(shape.to_dict()))) == shape
    dense = ModelShape(2, 8, 2, 4)
    assert "num_experts" not in dense.to_dict()
    assert dense.matrix_count_formula == "L(2H + 2)" and shape.matrix_count_formula == "L(2H + 3E + 3)"
    with pytest.raises(ValueError, match=r"routed to 1\.\.3"):
        ModelShape(2, 8, 2, 4, mlp=Mlp.GATED, num_experts=3, experts_per_token=4)


def test_qwen_moe_with_dense_layers_is_refused(tmp_path: Path) -> None:
    config = transformers.Qwen2MoeConfig(**_COMMON, **FAMILIES["qwen2_moe"][2], mlp_only_layers=[1])
    (tmp_path / "config.json").write_text(config.to_json_string())
    with pytest.raises(UnsupportedModelError, match="mlp_only_layers"):
        specbound.analyze(tmp_path, use_cache=False)


# --- downstream: the command line, the atlas, the cache and the random twin -----------------------


def test_cli_header_json_and_tables_carry_the_experts(saved: dict[str, tuple[Any, Path]]) -> None:
    from cli_runner import cli

    _, directory = saved["qwen2_moe"]
    result = cli("analyze", str(directory), "--no-cache")
    assert result.returncode == 0, result.stderr
    assert "(gated experts: E=4, top-2 + a shared expert of d_ff=40)" in result.stdout
    assert "46 matrices" in result.stdout and "router held fixed" in result.stdout
    data = json.loads(cli("analyze", str(directory), "--json", "--no-cache").stdout)
    assert data["num_experts"] == 4 and len(data["matrices"]) == 46


def test_atlas_and_cache_keep_the_experts(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    from specbound.io.atlas import load_atlas, read_manifest, save_atlas
    from specbound.io.cache import ProfileCache

    _, directory = saved["mixtral"]
    profile = specbound.analyze(directory, use_cache=False).profile
    (loaded,) = load_atlas(save_atlas([profile], tmp_path / "moe.npz"))
    assert read_manifest(tmp_path / "moe.npz").schema == 3  # an older specbound refuses it by name
    bert = ModelShape(1, 4, 1, 4)
    assert read_manifest(save_atlas([make_profile(bert, [[1.0]] * 4)], tmp_path / "dense.npz")).schema == 2
    assert loaded.shape == profile.shape and loaded.ids == profile.ids
    np.testing.assert_array_equal(loaded.singular_values, profile.singular_values)
    cache = ProfileCache(tmp_path / "cache")
    cache.save(profile)
    cached = cache.load(profile.model, profile.revision)
    assert cached is not None and cached.shape == profile.shape
    np.testing.assert_array_equal(cached.singular_values, profile.singular_values)


def test_random_twin_of_a_mixture_of_experts_has_every_expert(saved: dict[str, tuple[Any, Path]]) -> None:
    from specbound.studies.twin import random_twin

    _, directory = saved["olmoe"]
    shape = specbound.analyze(directory, use_cache=False).shape
    twin = random_twin(shape, model="olmoe")
    assert twin.shape == shape
    ranks = twin.rank[twin.rows_of(kinds=[Kind.M_OUT])]
    assert ranks.tolist() == [32] * (2 * 4)  # every expert's M_out of every layer, full rank


def test_the_trainer_callback_reads_a_mixture_of_experts_as_it_trains(tmp_path: Path) -> None:
    """transformers trains the fused experts; the callback's values at a save equal the saved checkpoint's."""
    from trainer_runs import train_with_callback

    model = make_model("mixtral").to(torch.float32)
    ids = torch.randint(3, 64, (16, 8), generator=torch.Generator().manual_seed(0))
    data = [{"input_ids": i, "labels": i} for i in ids]
    saved = train_with_callback(model, data, tmp_path / "out", "tiny-mixtral")
    assert saved.shape.num_experts == 4


def test_the_layer_limit_counts_one_expert_not_all_of_them() -> None:
    from specbound.core.limits import LIMITS, LimitExceededError, check_declared_sizes, layer_peak_bytes

    sizes: dict[str, Any] = dict(num_heads=32, num_kv_heads=8, mlp=Mlp.GATED, activation="silu")
    mixtral = ModelShape(32, 4096, ffn_size=14336, num_experts=8, experts_per_token=2, **sizes)
    dense = ModelShape(32, 4096, ffn_size=14336, **sizes)  # one MLP of an expert's width
    assert layer_peak_bytes(mixtral) == layer_peak_bytes(dense) == 8 * (4096 * 14336 + 2 * 4096**2)
    shared = ModelShape(2, 64, 4, 32, mlp=Mlp.GATED, num_experts=4, experts_per_token=1, shared_expert_size=128)
    assert layer_peak_bytes(shared) == 8 * (64 * 128 + 2 * 64**2)  # the wider shared expert sets the peak
    with pytest.raises(LimitExceededError, match="num_experts"):
        check_declared_sizes({"num_experts": LIMITS.max_experts + 1}, "config.json")


def test_figures_draw_one_expert_or_every_expert_as_asked() -> None:
    from specbound.present.figures import bounds as bound_figures
    from specbound.present.figures import spectra as spectra_figures

    shape = ModelShape(2, 8, 2, 4, mlp=Mlp.GATED, num_experts=3, experts_per_token=2, shared_expert_size=6)
    profile = make_profile(shape, [[1.0 + i % 5, 0.5] for i in range(shape.num_matrices)])
    (heatmap,) = spectra_figures.rank_against_maximum(profile, Kind.M_OUT).data
    assert heatmap.z.shape == (2, 4) and list(heatmap.x) == ["expert 0", "expert 1", "expert 2", "shared expert"]
    curves = spectra_figures.singular_value_profiles(profile, [0], [Kind.M_IN], experts=[2])
    drawn = [t.name for t in curves.data if t.x[0] is not None]
    assert drawn == ["L0 M_in e2"]
    assert [a.text for a in curves.layout.annotations if "M_in" in a.text] == ["M_in of expert 2 · 2 zero σ not drawn"]
    analysis = BoundAnalysis.from_profile(profile)
    strip = bound_figures.p_star_heatmap(analysis, expert="shared").data[2]
    np.testing.assert_array_equal(
        strip.z, np.stack([profile.per_layer(analysis.p_opt, k, "shared") for k in shape.layer_kinds], axis=1)
    )


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"num_local_experts": True}, "num_local_experts"),
        ({"num_local_experts": 10**9}, "num_experts = 1000000000, above the limit"),
        ({"num_experts_per_tok": 5}, "routed to 1..4 experts"),
        ({"num_experts_per_tok": "2"}, "num_experts_per_tok"),
        ({"num_local_experts": None}, "num_local_experts"),
    ],
)
def test_a_config_with_bad_expert_fields_is_refused_in_one_line(
    saved: dict[str, tuple[Any, Path]], tmp_path: Path, fields: dict[str, Any], words: str
) -> None:
    import shutil

    from cli_runner import cli

    _, directory = saved["mixtral"]
    edited = tmp_path / "edited"
    shutil.copytree(directory, edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, **fields}))
    result = cli("analyze", str(edited), "--no-cache")
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert words in line, line


@pytest.mark.parametrize(
    ("cut", "stored"),
    [
        (lambda t: t[:, :-1], "(4, 95, 32)"),  # one row short: the up projection no longer has d_ff rows
        (lambda t: torch.cat([t, t[:, :2]], dim=1), "(4, 98, 32)"),  # two rows more: views would drop them
        (lambda t: t[:3], "(3, 96, 32)"),  # an expert fewer than the config declares
        (lambda t: t[0], "(96, 32)"),  # not 3-D
    ],
)
def test_fused_experts_in_memory_of_another_shape_are_refused_as_on_disk(
    saved: dict[str, tuple[Any, Path]], cut: Callable[[torch.Tensor], torch.Tensor], stored: str
) -> None:
    """One check for a fused tensor in memory and on disk (TensorSlice.check): (E, 2 d_ff + 2, N) in a
    state dict was taken, its views leaving the two extra rows out, where the same on disk is refused."""
    from specbound.core.errors import UnsupportedModelError

    model, _ = saved["mixtral"]
    state = dict(model.state_dict())
    key = "model.layers.1.mlp.experts.gate_up_proj"
    state[key] = cut(state[key])
    with pytest.raises(UnsupportedModelError) as caught:
        Checkpoint.from_state_dict(model.config.to_dict(), state, "the model").layer(1)
    message = str(caught.value)
    assert "\n" not in message
    assert message == f"fused weight '{key}' has shape {stored}, but the model's config implies (4, 96, 32)"


# --- experts saved fused on disk (transformers' save_original_format=False) -----------------------


@pytest.mark.parametrize("weights", ["safetensors", "pickle"])
@pytest.mark.parametrize("name", FAMILIES)
def test_experts_saved_fused_on_disk_read_as_the_stored_layout(
    saved: dict[str, tuple[Any, Path]], tmp_path: Path, name: str, weights: str
) -> None:
    """The 3-D ``experts.gate_up_proj`` / ``experts.down_proj`` that transformers writes with
    ``save_original_format=False`` give every expert's matrices exactly as the per-expert layout does."""
    from safetensors import safe_open

    model, directory = saved[name]
    fused = tmp_path / "fused"
    save_model(model, fused, original_format=False, safe=weights == "safetensors")
    if weights == "safetensors":
        with safe_open(str(fused / "model.safetensors"), framework="np") as f:
            assert "model.layers.0.mlp.experts.gate_up_proj" in f.keys()  # noqa: SIM118 (not a dict)
            assert not any(".experts.0." in key for key in f.keys())  # noqa: SIM118
    reference = specbound.analyze(directory, use_cache=False).profile
    profile = specbound.analyze(fused, use_cache=False).profile
    assert profile.ids == reference.ids and profile.shape == reference.shape
    np.testing.assert_allclose(profile.singular_values, reference.singular_values, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(profile.norm_21, reference.norm_21, rtol=1e-12)
    np.testing.assert_allclose(profile.norm_11, reference.norm_11, rtol=1e-12)


def test_a_fused_expert_is_read_alone_from_its_memory_map(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    """From safetensors an expert's slice is a view of the file's memory map (one expert widened at a
    time): the gate is rows [0, d_ff) of gate_up_proj[e], the up projection rows [d_ff, 2 d_ff)."""
    model, _ = saved["mixtral"]
    save_model(model, tmp_path / "fused", original_format=False)
    checkpoint = open_checkpoint(tmp_path / "fused")
    layer = next(checkpoint.stream())
    state = model.state_dict()
    gate_up = state["model.layers.0.mlp.experts.gate_up_proj"].numpy()  # (E, 2 d_ff, N)
    down = state["model.layers.0.mlp.experts.down_proj"].numpy()  # (E, N, d_ff)
    f = 48
    for field, expected in (
        (mlp_field(Kind.M_GATE, 2), gate_up[2, :f]),
        (mlp_field(Kind.M_IN, 2), gate_up[2, f:]),
        (mlp_field(Kind.M_OUT, 3), down[3]),
    ):
        mapped = layer.mlp_mapped(field)
        assert mapped is not None
        rows, columns = mapped.shape  # the row-vector matrix Wᵀ, cut into blocks along its longer side
        blocks = list(mapped.blocks(1 << 10))
        assert len(blocks) > 1
        np.testing.assert_array_equal(np.concatenate(blocks, axis=1 if rows <= columns else 0).T, expected)
        np.testing.assert_array_equal(layer.mlp_weight(field), expected)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"num_local_experts": 3}, "fused weight 'model.layers.0.mlp.experts.gate_up_proj' has shape (4, 96, 32), "
                                   "but config.json implies (3, 96, 32)"),
        ({"intermediate_size": 40}, "but config.json implies (4, 80, 32)"),
    ],
)  # fmt: skip
def test_fused_experts_on_disk_that_disagree_with_the_config_are_refused_in_one_line(
    saved: dict[str, tuple[Any, Path]], tmp_path: Path, fields: dict[str, Any], words: str
) -> None:
    from cli_runner import cli

    model, _ = saved["mixtral"]
    fused = tmp_path / "fused"
    save_model(model, fused, original_format=False)
    config = json.loads((fused / "config.json").read_text())
    (fused / "config.json").write_text(json.dumps({**config, **fields}))
    result = cli("analyze", str(fused), "--no-cache")
    assert result.returncode == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert words in line, line


@pytest.mark.parametrize("name", FAMILIES)
def test_every_matrix_names_the_checkpoint_tensors_it_is_built_from(
    saved: dict[str, tuple[Any, Path]], name: str
) -> None:
    from family_models import assert_matrix_tensors_exist

    assert_matrix_tensors_exist(saved[name][1])
