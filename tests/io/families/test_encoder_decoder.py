"""Encoder-decoders (SPEC §12): T5 (plain and gated), mT5, BART and mBART, read and checked against the
Hugging Face modules' own forward pass.

Tiny random models are built from transformers' own classes in float64 and written with its own
``save_pretrained`` (sharded and as ``.bin`` too). Checked here:

* every layer's self-attention (QK_h, V_h), every decoder layer's cross-attention (QK_x,h, V_x,h)
  and every MLP reproduce the module's output on the inputs captured in one forward pass of the
  whole model, the cross-attention's keys and values being the encoder's output; the cross-attention
  evaluated on the decoder's own state, built from the self-attention's key and value weights, or
  with its heads rolled, fails the same check;
* the counts and fields of §12: L_enc (2H + k) + L_dec (4H + k) matrices, each with its ``"stack"``,
  ``encoder_layers`` and ``decoder_layers`` in the JSON, QK_x and V_x in decoder layers only;
* a model held in memory reads exactly as its saved directory, and every weight format alike;
* α and γ of the adaptation "in series" in closed form on a hand-built profile.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from family_models import save_each
from hand_profiles import make_profile
from tiny_models import save_model, transformers_model

import specbound
from specbound.core.architecture import DECODER, ENCODER, Adaptation, Kind, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.matrices import LayerWeights, layer_factors
from specbound.core.profile import MatrixId
from specbound.io.checkpoints import open_checkpoint

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

N, H = 32, 4
#: name -> (config class, model class, config fields); the gated T5's heads are of d = 6, so H d = 24 ≠ N
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "t5": (
        "T5Config",
        "T5ForConditionalGeneration",
        dict(d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=3, feed_forward_proj="relu"),
    ),
    "t5-gated": (
        "T5Config",
        "T5ForConditionalGeneration",
        dict(d_kv=6, d_ff=40, num_layers=2, feed_forward_proj="gated-gelu"),
    ),
    "mt5": ("MT5Config", "MT5ForConditionalGeneration", dict(d_kv=8, d_ff=40, num_layers=2, num_decoder_layers=2)),
    "bart": (
        "BartConfig",
        "BartForConditionalGeneration",
        dict(
            encoder_layers=2,
            decoder_layers=3,
            encoder_attention_heads=H,
            decoder_attention_heads=H,
            encoder_ffn_dim=48,
            decoder_ffn_dim=48,
            max_position_embeddings=32,
        ),
    ),
    # a BART whose decoder's feed-forward is narrower than the encoder's (and than N): each stack's MLP
    # matrices carry their own d_ff and min(N, d_ff)
    "bart-ffn": (
        "BartConfig",
        "BartForConditionalGeneration",
        dict(
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=H,
            decoder_attention_heads=H,
            encoder_ffn_dim=48,
            decoder_ffn_dim=24,
            max_position_embeddings=32,
        ),
    ),
    "mbart": (
        "MBartConfig",
        "MBartForConditionalGeneration",
        dict(
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=H,
            decoder_attention_heads=H,
            encoder_ffn_dim=40,
            decoder_ffn_dim=40,
            max_position_embeddings=32,
        ),
    ),
}
#: name -> (L_enc, L_dec, gated, activation, extra adaptations)
EXPECTED = {
    "t5": (2, 3, False, "relu", (Adaptation.RELATIVE_POSITION_BIAS,)),
    "t5-gated": (2, 2, True, "gelu_new", (Adaptation.RELATIVE_POSITION_BIAS, Adaptation.GATED_MLP)),
    "mt5": (2, 2, True, "gelu_new", (Adaptation.RELATIVE_POSITION_BIAS, Adaptation.GATED_MLP)),
    "bart": (2, 3, False, "gelu", ()),
    "bart-ffn": (2, 2, False, "gelu", ()),
    "mbart": (2, 2, False, "gelu", ()),
}
RIGHT, WRONG = 1e-6, 1e-2  # T5 takes its softmax in float32, which leaves ~1e-7


def is_t5(name: str) -> bool:
    return name.startswith(("t5", "mt5"))


def make_model(name: str) -> Any:
    config_class, model_class, extra = FAMILIES[name]
    common = dict(vocab_size=64, d_model=N, decoder_start_token_id=0, pad_token_id=1, eos_token_id=2)
    sizes = {"num_heads": H} if is_t5(name) else {}
    eager = {"_attn_implementation": "eager"}
    seed = sorted(FAMILIES).index(name)
    model = transformers_model(
        config_class, model_class, {**common, **sizes, **extra}, seed=seed, dtype="float64", set_after=eager
    )
    model.eval()
    with torch.no_grad():
        for key, parameter in model.named_parameters():
            if "relative_attention_bias" in key or key.endswith(".bias"):
                parameter.zero_()  # the position-free, bias-free maps the proxies describe
            elif parameter.ndim >= 2 and "embed" not in key and "shared" not in key:
                parameter.normal_(0.0, 0.2)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Path]]:
    return save_each(make_model, FAMILIES, tmp_path_factory.mktemp("seq2seq"))


# --- functional parity with the Hugging Face modules -----------------------------------------------


def _modules(model: Any, name: str, stack: str, layer: int) -> dict[str, Any]:
    """The layer's self-attention, cross-attention (decoder) and MLP modules, by transformers' names."""
    if is_t5(name):
        block = getattr(model, stack).block[layer]
        found = {"self": block.layer[0].SelfAttention, "mlp": block.layer[-1].DenseReluDense}
        if stack == DECODER:
            found["cross"] = block.layer[1].EncDecAttention
        return found
    block = getattr(model.model, stack).layers[layer]
    found = {"self": block.self_attn, "mlp": block}
    if stack == DECODER:
        found["cross"] = block.encoder_attn
    return found


def _projections(name: str) -> tuple[str, str, str]:
    return ("q", "k", "o") if is_t5(name) else ("q_proj", "k_proj", "out_proj")


def trace(model: Any, name: str) -> dict[tuple[str | None, int, str], Any]:
    """One forward pass of the whole model; per (stack, layer, part): the attention's query and key
    inputs and its output before the residual ("self", "cross"), or the MLP's input and output."""
    captured: dict[tuple[str | None, int, str], Any] = {}
    hooks = []
    q, k, o = _projections(name)
    stacks = {ENCODER: EXPECTED[name][0], DECODER: EXPECTED[name][1]}
    for stack, layers in stacks.items():
        for layer in range(layers):
            modules = _modules(model, name, stack, layer)
            for part in ("self", "cross"):
                if part not in modules:
                    continue
                attention = modules[part]
                entry = captured.setdefault((stack, layer, part), {})
                for projection, slot in ((q, "x_q"), (k, "x_kv")):
                    hooks.append(
                        getattr(attention, projection).register_forward_hook(
                            lambda _m, args, _out, entry=entry, slot=slot: entry.update({slot: args[0][0].numpy()})
                        )
                    )
                hooks.append(
                    getattr(attention, o).register_forward_hook(
                        lambda _m, _args, out, entry=entry: entry.update(out=out[0].numpy())
                    )
                )
            entry = captured.setdefault((stack, layer, "mlp"), {})
            mlp = modules["mlp"]
            first, last = (mlp, mlp) if is_t5(name) else (mlp.fc1, mlp.fc2)
            hooks.append(
                first.register_forward_hook(lambda _m, args, _o, entry=entry: entry.update(x=args[0][0].numpy()))
            )
            hooks.append(last.register_forward_hook(lambda _m, _a, out, entry=entry: entry.update(out=out[0].numpy())))
    inputs = torch.randint(3, 64, (1, 7), generator=torch.Generator().manual_seed(0))
    targets = torch.randint(3, 64, (1, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model(input_ids=inputs, decoder_input_ids=targets)
    for hook in hooks:
        hook.remove()
    return captured


def _relative(predicted: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm(predicted - reference) / np.linalg.norm(reference))


def _attend(x_q: np.ndarray, x_kv: np.ndarray, qk: np.ndarray, v: np.ndarray, scale: float, causal: bool) -> np.ndarray:
    """sum_h softmax(scale x_q QK_h x_kvᵀ) x_kv V_h, the row-vector form of an attention (biases zeroed)."""
    logits = scale * np.einsum("tn,hnm,sm->hts", x_q, qk, x_kv)  # (H, T_q, T_kv)
    if causal:
        logits = np.where(np.triu(np.ones(logits.shape[1:], dtype=bool), 1), -np.inf, logits)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    out: np.ndarray = np.einsum("hts,sn,hnm->tm", weights, x_kv, v)
    return out


def _dense(factors: Any) -> tuple[np.ndarray, np.ndarray]:
    return factors.qk_left @ factors.qk_right, factors.v_left @ factors.v_right  # (H, N, N) each


def _cross(
    weights: LayerWeights, shape: ModelShape, *, key_value: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """QK_x and V_x as dense (H, N, N), from the cross-attention's weights (or with another key, value)."""
    cross = weights.cross_attention_weights()
    assert cross is not None  # a decoder layer
    query, key, value, out = cross
    if key_value is not None:
        key, value = key_value
    return _dense(
        layer_factors(LayerWeights(query, key, value, out, weights.ffn_in, weights.ffn_out, weights.gate), shape)
    )


def _mlp(name: str, weights: LayerWeights, shape: ModelShape, x: np.ndarray) -> np.ndarray:
    factors = layer_factors(weights, shape)
    act = transformers.activations.ACT2FN[shape.activation]
    up = torch.from_numpy(x @ factors.mlp[Kind.M_IN])
    if shape.gated:
        hidden = act(torch.from_numpy(x @ factors.mlp[Kind.M_GATE])) * up
    else:
        hidden = act(up)
    result: np.ndarray = hidden.numpy() @ factors.mlp[Kind.M_OUT]
    return result


@pytest.mark.parametrize("name", FAMILIES)
def test_every_matrix_reproduces_its_module_and_wrong_readings_fail(
    saved: dict[str, tuple[Any, Path]], name: str
) -> None:
    model, directory = saved[name]
    checkpoint = open_checkpoint(directory)
    shape = checkpoint.shape
    scale = 1.0 if is_t5(name) else shape.head_dim**-0.5  # T5 has no 1/sqrt(d)
    captured = trace(model, name)
    for layer in range(shape.num_layers):
        stack, number = shape.stack_of(layer), shape.stack_layer(layer)
        weights = checkpoint.layer(layer)
        # the self-attention: causal in the decoder
        seen = captured[(stack, number, "self")]
        qk, v = _dense(layer_factors(weights, shape))
        ours = _attend(seen["x_q"], seen["x_q"], qk, v, scale, causal=stack == DECODER)
        assert _relative(ours, seen["out"]) < RIGHT, (layer, "self")
        rolled = [1, 2, 3, 0]  # wrong: each query head read with the next head's keys (or values)
        for wrong in ((qk[rolled], v), (qk, v[rolled])):
            shifted = _attend(seen["x_q"], seen["x_q"], *wrong, scale, causal=stack == DECODER)
            assert _relative(shifted, seen["out"]) > WRONG, (layer, "self, heads rolled")
        # the MLP
        seen = captured[(stack, number, "mlp")]
        assert _relative(_mlp(name, weights, shape, seen["x"]), seen["out"]) < RIGHT, (layer, "mlp")
        if stack == ENCODER:
            assert weights.cross_attention_weights() is None
            continue
        # the cross-attention: queries from the decoder's state, keys and values from the encoder's output
        seen = captured[(stack, number, "cross")]
        assert seen["x_kv"].shape[0] == 7 and seen["x_q"].shape[0] == 5  # encoder positions, decoder positions
        qk_x, v_x = _cross(weights, shape)
        assert _relative(_attend(seen["x_q"], seen["x_kv"], qk_x, v_x, scale, False), seen["out"]) < RIGHT
        # wrong: the decoder's own state as keys and values; the self-attention's K and V weights; heads rolled
        on_decoder = _attend(seen["x_q"], seen["x_q"], qk_x, v_x, scale, False)
        assert _relative(on_decoder, seen["out"]) > WRONG
        qk_w, v_w = _cross(weights, shape, key_value=(weights.key, weights.value))
        assert _relative(_attend(seen["x_q"], seen["x_kv"], qk_w, v_w, scale, False), seen["out"]) > WRONG
        assert _relative(_attend(seen["x_q"], seen["x_kv"], qk_x[rolled], v_x, scale, False), seen["out"]) > WRONG
        assert _relative(_attend(seen["x_q"], seen["x_kv"], qk_x, v_x[rolled], scale, False), seen["out"]) > WRONG


# --- counts, fields and the ways a model arrives ---------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_counts_stacks_and_json_fields(saved: dict[str, tuple[Any, Path]], name: str) -> None:
    _, directory = saved[name]
    encoder, decoder, gated, activation, extra = EXPECTED[name]
    analysis = specbound.analyze(directory, use_cache=False)
    shape = analysis.shape
    assert (shape.encoder_layers, shape.decoder_layers, shape.num_layers) == (encoder, decoder, encoder + decoder)
    assert (shape.gated, shape.activation, shape.num_heads) == (gated, activation, H)
    assert shape.head_dim == (6 if name == "t5-gated" else 8)
    assert {Adaptation.IN_SERIES, Adaptation.CAUSAL, *extra} == set(shape.adaptations)
    k = 3 if gated else 2
    assert shape.num_matrices == encoder * (2 * H + k) + decoder * (4 * H + k)
    assert shape.matrix_count_formula == f"L_enc(2H + {k}) + L_dec(4H + {k})"
    data = json.loads(analysis.to_json())
    assert (data["encoder_layers"], data["decoder_layers"], data["num_layers"]) == (encoder, decoder, encoder + decoder)
    assert len(data["matrices"]) == shape.num_matrices and len(data["log10_alpha"]) == encoder + decoder
    for matrix in data["matrices"]:
        in_decoder = matrix["layer"] >= encoder
        assert matrix["stack"] == (DECODER if in_decoder else ENCODER)
        assert matrix["stack_layer"] == matrix["layer"] - (encoder if in_decoder else 0)
        if matrix["kind"] in ("QK_x", "V_x"):
            assert in_decoder
    kinds = [m["kind"] for m in data["matrices"] if m["layer"] == encoder]  # the decoder's first layer
    assert kinds == ["QK"] * H + ["V"] * H + ["QK_x"] * H + ["V_x"] * H + ["M_gate", "M_in", "M_out"][3 - k :]
    assert "QK_x" not in [m["kind"] for m in data["matrices"] if m["layer"] < encoder]
    # every QK_x has rank d (Gaussian weights), and the profile finds it by layer and head
    profile = analysis.profile
    row = profile.index(MatrixId(encoder, Kind.QK_X, 2))
    assert profile.ids[row].label == "dec L0 QK_x h2" and profile.rank[row] == shape.head_dim
    assert profile.per_head(profile.rank, Kind.QK_X).shape == (decoder, H)
    # d_ff: one width, or each stack's where they differ; every MLP matrix has its own stack's min(N, d_ff)
    widths = {ENCODER: 48, DECODER: 24} if name == "bart-ffn" else None
    assert data["ffn_size"] == (widths or shape.ffn_size)
    for matrix in data["matrices"]:
        if matrix["kind"] in ("M_in", "M_out"):
            f = widths[matrix["stack"]] if widths else shape.ffn_size
            assert matrix["rank"] == min(N, f), matrix


@pytest.mark.parametrize("name", FAMILIES)
def test_model_in_memory_equals_its_directory(saved: dict[str, tuple[Any, Path]], name: str) -> None:
    model, directory = saved[name]
    from_disk = json.loads(specbound.analyze(directory, use_cache=False).to_json())
    in_memory = json.loads(specbound.analyze(model).to_json())
    assert in_memory["matrices"] == from_disk["matrices"] and in_memory["proxies"] == from_disk["proxies"]


def test_every_weight_format_reads_alike(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    model, directory = saved["t5-gated"]
    reference = json.loads(specbound.analyze(directory, use_cache=False).to_json())
    save_model(model, tmp_path / "sharded", max_shard_size="20KB")
    save_model(model, tmp_path / "bin", safe=False)
    assert len(list((tmp_path / "sharded").glob("*.safetensors"))) > 2
    for form in ("sharded", "bin"):
        data = json.loads(specbound.analyze(tmp_path / form, use_cache=False).to_json())
        assert data["matrices"] == reference["matrices"], form


def test_a_t5_encoder_alone_names_the_missing_decoder(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    model, _ = saved["t5"]
    encoder = transformers.T5EncoderModel(model.config).to(torch.float64)
    save_model(encoder, tmp_path / "encoder")
    with pytest.raises(specbound.SpecboundError, match=r"decoder\.block\.0\..*missing.*2 encoder and 3 decoder"):
        specbound.analyze(tmp_path / "encoder", use_cache=False)


# --- the adaptation "in series" in closed form ------------------------------------------------------


def test_alpha_and_gamma_in_series_in_closed_form() -> None:
    """One encoder and one decoder layer, one head (d = N = 2), d_ff = 2, a plain ReLU MLP."""
    shape = ModelShape(
        num_layers=2, hidden_size=2, num_heads=1, ffn_size=2, activation="relu", family="t5", encoder_layers=1
    )
    # encoder: QK, V, M_in, M_out; decoder: QK, V, QK_x, V_x, M_in, M_out
    norms = [0.5, 2.0, 3.0, 1.5, 0.25, 1.5, 2.0, 0.5, 2.0, 4.0]
    profile = make_profile(shape, [[s] for s in norms])
    analysis = BoundAnalysis.from_profile(profile)
    phi_enc, phi_dec = 3.0 * 1.5, 2.0 * 4.0  # ||M_in|| ||M_out||, L_phi = 1
    a_self, a_x = 1.5 * (1 + 4 * 0.25), 0.5 * (1 + 4 * 2.0)
    f_dec = a_self * a_x * phi_dec  # the decoder block: self-attention, cross-attention, MLP in series
    np.testing.assert_allclose(np.exp(analysis.log_alpha), [f_dec, 1.0], rtol=1e-12)
    expected_gamma = [
        2 * 2.0 * phi_enc,  # encoder QK: 2 ||V|| Phi
        phi_enc,  # encoder V
        1.5,  # M_in: ||M_out||
        1.0,  # M_out
        2 * 1.5 * a_x * phi_dec,  # decoder QK: 2 ||V|| A_x Phi
        a_x * phi_dec,  # decoder V: A_x Phi
        2 * 0.5 * phi_dec,  # QK_x: 2 ||V_x|| Phi
        phi_dec,  # V_x: Phi
        4.0,
        1.0,
    ]
    np.testing.assert_allclose(analysis.gamma, expected_gamma, rtol=1e-12)
    # Edelman: gamma^E halves QK's and QK_x's gamma, and each layer's xi sums its own matrices
    gamma_e = np.array(expected_gamma) * [0.5, 1, 1, 1, 0.5, 1, 0.5, 1, 1, 1]
    terms = (gamma_e * 1.0) ** (2 / 3)  # ||W||_{2,1} = 1
    xi = [terms[:4].sum(), terms[4:].sum()]
    edelman = (1 + f_dec ** (2 / 3) * xi[0] + xi[1]) ** 1.5
    assert math.isclose(analysis.edelman, edelman, rel_tol=1e-12)
    # the grid reads L = L_enc + L_dec
    assert analysis.grid_m == math.ceil(2 + math.log(2))


# --- downstream: the command line, the atlas, the cache, the random twin and the callback --------


def test_cli_header_and_tables_carry_the_stacks(saved: dict[str, tuple[Any, Path]]) -> None:
    from cli_runner import cli

    _, directory = saved["bart"]
    result = cli("analyze", str(directory), "--no-cache")
    assert result.returncode == 0, result.stderr
    assert "L=5 (2 encoder + 3 decoder layers, in series)" in result.stdout and "74 matrices" in result.stdout
    assert "encoder-decoder in series" in result.stdout
    header = next(line for line in result.stdout.splitlines() if line.split()[:3] == ["layer", "stack", "stack_layer"])
    assert "sum_c_QK_x" in header and "sum_c_V_x" in header
    rows = [line.split() for line in result.stdout.splitlines() if line.split()[1:2] in (["encoder"], ["decoder"])]
    assert [row[1:3] for row in rows] == [["encoder", "0"], ["encoder", "1"], *(["decoder", str(i)] for i in range(3))]
    cross = [header.split().index("sum_c_QK_x"), header.split().index("sum_c_V_x")]
    assert [[row[i] for i in cross] for row in rows[:2]] == [["-", "-"]] * 2  # an encoder layer has no cross-attention
    assert all(float(row[i]) > 0 for row in rows[2:] for i in cross)


def test_export_writes_each_matrix_with_its_stack(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    import pandas as pd
    from cli_runner import cli

    _, directory = saved["t5-gated"]
    result = cli("export", str(directory), "--no-cache", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    matrices = pd.read_csv(tmp_path / "out" / "matrices.csv")
    reference = specbound.analyze(directory, use_cache=False).to_dict()["matrices"]
    assert matrices[["layer", "stack", "stack_layer", "kind"]].values.tolist() == [
        [m["layer"], m["stack"], m["stack_layer"], m["kind"]] for m in reference
    ]
    np.testing.assert_allclose(matrices["p_opt"], [m["p_opt"] for m in reference], rtol=1e-12)
    sigmas = pd.read_csv(tmp_path / "out" / "singular_values.csv")
    assert set(sigmas.loc[sigmas["kind"] == "QK_x", "stack"]) == {"decoder"}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["encoder_layers"], summary["decoder_layers"]) == (2, 2)


def test_trajectory_follows_an_encoder_decoder_through_its_checkpoints(
    saved: dict[str, tuple[Any, Path]], tmp_path: Path
) -> None:
    import copy

    from cli_runner import cli

    model = copy.deepcopy(saved["bart"][0])
    for step in (1, 2):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.mul_(1.5)  # each step scales every weight, so the norm-based proxy grows
        save_model(model, tmp_path / "run" / f"checkpoint-{step}")
    result = cli("trajectory", str(tmp_path / "run"), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    import pandas as pd

    frame = pd.read_csv(tmp_path / "out" / "trajectory.csv")
    assert frame["step"].tolist() == [1, 2]
    expected = [specbound.analyze(tmp_path / "run" / f"checkpoint-{s}", use_cache=False) for s in (1, 2)]
    np.testing.assert_allclose(frame["ours_log10"], [a.ours_log10 for a in expected], rtol=1e-9)
    np.testing.assert_allclose(frame["edelman_log10"], [a.edelman_log10 for a in expected], rtol=1e-9)
    assert expected[1].edelman_log10 > expected[0].edelman_log10


def test_atlas_and_cache_keep_the_stacks(saved: dict[str, tuple[Any, Path]], tmp_path: Path) -> None:
    from specbound.io.atlas import load_atlas, read_manifest, save_atlas
    from specbound.io.cache import ProfileCache

    _, directory = saved["t5"]
    profile = specbound.analyze(directory, use_cache=False).profile
    (loaded,) = load_atlas(save_atlas([profile], tmp_path / "seq2seq.npz"))
    assert read_manifest(tmp_path / "seq2seq.npz").schema == 4  # an older specbound refuses it by name
    assert loaded.shape == profile.shape and loaded.shape.encoder_layers == 2
    assert [(i.stack, i.stack_layer) for i in loaded.ids] == [(i.stack, i.stack_layer) for i in profile.ids]
    np.testing.assert_array_equal(loaded.singular_values, profile.singular_values)
    cache = ProfileCache(tmp_path / "cache")
    cache.save(profile)
    cached = cache.load(profile.model, profile.revision)
    assert cached is not None and cached.shape == profile.shape
    np.testing.assert_array_equal(cached.singular_values, profile.singular_values)
    assert ModelShape.from_dict(json.loads(json.dumps(profile.shape.to_dict()))) == profile.shape
    assert "encoder_layers" not in ModelShape(2, 8, 2, 4).to_dict()  # a one-stack shape is written as before


def test_a_decoder_of_its_own_width_round_trips_and_is_refused_by_older_readers(
    saved: dict[str, tuple[Any, Path]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BART's encoder_ffn_dim ≠ decoder_ffn_dim: the shape keeps both (``decoder_ffn_size``), the atlas is
    schema 5 (a reader of schema 4 refuses it by name instead of misreading its MLP widths), the cache
    and the CLI's header carry both, and a shape of one width is written as before."""
    from cli_runner import cli

    from specbound.io import atlas
    from specbound.io.atlas import AtlasError, load_atlas, read_manifest, save_atlas
    from specbound.io.cache import ProfileCache

    _, directory = saved["bart-ffn"]
    profile = specbound.analyze(directory, use_cache=False).profile
    shape = profile.shape
    assert (shape.ffn_size, shape.decoder_ffn_size, shape.max_ffn_size) == (48, 24, 48)
    assert [shape.expert_ffn_size(None, layer) for layer in range(4)] == [48, 48, 24, 24]
    assert shape.to_dict()["decoder_ffn_size"] == 24 and ModelShape.from_dict(shape.to_dict()) == shape
    assert "decoder_ffn_size" not in ModelShape(4, 32, 4, 48, encoder_layers=2, decoder_ffn_size=48).to_dict()
    path = save_atlas([profile], tmp_path / "bart.npz")
    assert read_manifest(path).schema == 5
    (loaded,) = load_atlas(path)
    assert loaded.shape == shape
    np.testing.assert_array_equal(loaded.full_dims, profile.full_dims)
    monkeypatch.setattr(atlas, "SCHEMA_VERSION", 4)  # a specbound from before decoders of their own width
    with pytest.raises(AtlasError, match="uses atlas schema 5, newer than this specbound reads"):
        load_atlas(path)
    monkeypatch.undo()
    cache = ProfileCache(tmp_path / "cache")
    cache.save(profile)
    cached = cache.load(profile.model, profile.revision)
    assert cached is not None and cached.shape == shape
    header = cli("analyze", str(directory), "--no-cache").stdout
    assert "d_ff=48 (encoder), 24 (decoder)" in header
    with pytest.raises(ValueError, match="needs an encoder-decoder"):
        ModelShape(2, 32, 4, 48, decoder_ffn_size=24)


def test_random_twin_of_an_encoder_decoder_draws_t5s_own_scales(saved: dict[str, tuple[Any, Path]]) -> None:
    from specbound.studies.twin import random_twin

    _, directory = saved["t5-gated"]
    shape = specbound.analyze(directory, use_cache=False).shape
    twin = random_twin(shape, model="t5", initializer_range=1.0)
    assert twin.shape == shape and len(twin.ids) == shape.num_matrices
    assert twin.rank[twin.rows_of(kinds=[Kind.QK_X])].tolist() == [6] * (2 * H)  # every decoder head, rank d
    # T5 draws W_Q with sigma / sqrt(N d) and W_K with sigma / sqrt(N): a QK head's norm is about
    # ||W_Q,h|| ||W_K,h|| ~ (1 + sqrt(d / N))^2 / sqrt(d), far below one
    qk = twin.spectral_norm[twin.rows_of(kinds=[Kind.QK])]
    assert 0.1 < float(np.median(qk)) < 1.2


def test_the_trainer_callback_reads_an_encoder_decoder_as_it_trains(tmp_path: Path) -> None:
    from trainer_runs import train_with_callback

    model = make_model("t5").to(torch.float32)
    ids = torch.randint(3, 64, (16, 6), generator=torch.Generator().manual_seed(0))
    data = [{"input_ids": i, "labels": i.flip(0)} for i in ids]
    saved = train_with_callback(model, data, tmp_path / "out", "tiny-t5")
    assert saved.shape.encoder_layers == 2


def test_figures_draw_each_stack_with_its_kinds() -> None:
    from specbound.present.figures import bounds as bound_figures
    from specbound.present.figures import spectra as spectra_figures

    shape = ModelShape(3, 4, 2, 4, family="t5", activation="relu", encoder_layers=1)
    profile = make_profile(shape, [[1.0 + i % 5, 0.5] for i in range(shape.num_matrices)])
    analysis = BoundAnalysis.from_profile(profile)
    decoder = bound_figures.p_star_heatmap(analysis, stack=DECODER)
    assert [t.name for t in decoder.data] == ["QK", "V", "QK_x", "V_x", "M_in, M_out"]
    # drawn beside the encoder's at about half the width: panels named by kind alone, every MLP tick kept
    assert [note.text for note in decoder.layout.annotations] == ["QK", "V", "QK_x", "V_x", "MLP"]
    assert decoder.layout.xaxis5.tickangle == -90
    assert list(decoder.data[2].y) == [1, 2] and list(decoder.layout.yaxis.ticktext) == ["0", "1"]
    np.testing.assert_array_equal(decoder.data[2].z, profile.per_head(analysis.p_opt, Kind.QK_X))
    encoder = bound_figures.p_star_heatmap(analysis, stack=ENCODER)
    assert [t.name for t in encoder.data] == ["QK", "V", "M_in, M_out"] and list(encoder.data[0].y) == [0]
    # the encoder's strip keeps its share of the cells (2 of 2 * 2 + 2) however few heads it has
    strip = encoder.layout.xaxis3.domain
    assert strip[1] - strip[0] > (encoder.layout.xaxis.domain[1] - encoder.layout.xaxis.domain[0]) / 2
    whole = bound_figures.p_star_heatmap(analysis)  # in series: the encoder's rows of QK_x are empty
    assert np.isnan(np.asarray(whole.data[2].z, dtype=float)[0]).all()
    (cross,) = [spectra_figures.head_heatmaps(profile, Kind.V_X, stack=DECODER)]
    assert list(cross.data[0].y) == [1, 2]
    assert cross.data[0].texttemplate is None  # beside the encoder's at half the width: numbers in the hover only
    assert cross.data[0].customdata.tolist() == [[0] * 2, [1] * 2]  # the hover's layer: its number in the decoder
    assert "decoder layer %{customdata}" in cross.data[0].hovertemplate
    np.testing.assert_array_equal(cross.data[0].z, profile.per_head(profile.rank, Kind.V_X))
    with pytest.raises(ValueError, match="encoder has no QK_x"):
        spectra_figures.head_heatmaps(profile, Kind.QK_X, stack=ENCODER)
    ranks = spectra_figures.rank_against_maximum(profile, Kind.QK_X)
    assert np.asarray(ranks.data[0].z).shape == (2, 2)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_matrix_names_the_checkpoint_tensors_it_is_built_from(
    saved: dict[str, tuple[Any, Path]], name: str
) -> None:
    from family_models import assert_matrix_tensors_exist

    assert_matrix_tensors_exist(saved[name][1])
