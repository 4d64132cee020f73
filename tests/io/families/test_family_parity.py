"""The extracted proxy matrices compute what the Hugging Face modules compute, head by head.

For every family, the tiny model runs in float64 with eager attention and zero biases (rotary
families at position 0, where the rotation is the identity), and forward hooks record each layer's
attention input x (after its layer norm), the attention output projection's input and output, and
the MLP's input and output. With specbound's factors read from the saved checkpoint
(``open_checkpoint(dir).layer(i)`` -> ``layer_factors``):

* QK: log A_h[i, j] - log A_h[i, 0] = s (x_i QK_h x_jᵀ - x_i QK_h x_0ᵀ) for every head h and every
  pair the mask allows (j <= i in a decoder), s the family's softmax scale 1 / √d: the logits up to
  the per-row constant the softmax removes;
* V: the output projection's input, head h, is Σ_j A_h[i, j] x_j V_g(h)ᵀ = A_h X v_left[h], and its
  output is Σ_h A_h X V_h (on a one-token sequence, A = 1 and this is Σ_h x V_h);
* MLP: φ(x M_in) M_out, or (φ(x M_gate) ⊙ x M_in) M_out for a gated MLP.

Then each classic wrong reading, built from the same weights, must fail the same check: heads
rolled by one, the output projection of the next head, GPT-NeoX's fused QKV read as three blocks,
grouped-query attention with key/value head h mod H_kv instead of ⌊h / (H / H_kv)⌋, gate and up
swapped.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from unittest import mock

import numpy as np
import pytest
from family_models import FAMILIES, IDENTITY, Built, Family, Sizes

from specbound.core.architecture import Kind, ModelShape
from specbound.core.matrices import LayerFactors, LayerWeights, layer_factors
from specbound.io.checkpoints import open_checkpoint

if TYPE_CHECKING:
    import torch

#: Relative error a right reading stays below: float64 end to end, except that several eager
#: attentions (Llama's, OPT's, GPT-NeoX's, ViT's) take the softmax in float32, which leaves ~1e-7
#: in the log probabilities.
PASS = {"qk": 1e-6, "v_heads": 1e-12, "v_out": 1e-12, "mlp": 1e-12}
#: a wrong reading is off by a sizeable fraction of the reference, not by rounding
FAIL = 1e-2

BATCH, TOKENS = 2, 7


@dataclass(frozen=True)
class LayerTrace:
    """What the Hugging Face modules computed in one layer, float64."""

    x: np.ndarray  # (B, T, N) attention input, after the layer norm
    probs: np.ndarray  # (B, H, T, T) attention probabilities
    context: np.ndarray  # (B, T, H d) input of the attention output projection
    attn_out: np.ndarray  # (B, T, N) its output
    mlp_x: np.ndarray  # (B, T, N) MLP input
    mlp_out: np.ndarray  # (B, T, N) MLP output


@dataclass(frozen=True)
class Trace:
    built: Built
    shape: ModelShape
    weights: list[LayerWeights]
    layers: list[LayerTrace]  # a sequence of TOKENS tokens
    one_token: list[LayerTrace] | None  # a single token (None for an image model: it has several patches)
    scales: list[float]

    @property
    def factors(self) -> list[LayerFactors]:
        return [layer_factors(w, self.shape) for w in self.weights]


def _inputs(built: Built, tokens: int) -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(tokens)
    family = built.family
    if family.vision:
        size, channels = built.config.image_size, built.config.num_channels
        return {"pixel_values": torch.randn(BATCH, channels, size, size, generator=generator, dtype=torch.float64)}
    inputs = {
        "input_ids": torch.randint(1, built.config.vocab_size, (BATCH, tokens), generator=generator),
        "attention_mask": torch.ones(BATCH, tokens, dtype=torch.long),
    }
    if family.rotary:  # position 0 everywhere: the rotation is the identity
        inputs["position_ids"] = torch.zeros(BATCH, tokens, dtype=torch.long)
    return inputs


def _softmax_scale(built: Built, layer: int) -> float:
    """The factor on q·k before the softmax, as each family's modeling file applies it."""
    config = built.config
    scale = Sizes.of(config).head_dim ** -0.5
    if built.family.model_type in ("gemma2", "gemma3_text"):  # Gemma2Attention, Gemma3Attention
        scale = config.query_pre_attn_scalar**-0.5
    if built.family.model_type == "gpt2":  # GPT2Attention
        scale = scale if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scale /= layer + 1
    return float(scale)


def _run(model: Any, family: Family, inputs: dict[str, Any]) -> list[LayerTrace]:
    """One forward pass with hooks on every layer's attention and MLP modules."""
    import torch

    base = model.base_model
    captured: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    handles = []
    layers = model.config.num_hidden_layers
    for i in range(layers):
        for role in {family.attention_input, "attn_out", family.mlp_input, "ffn_out"}:
            module = base.get_submodule(family.module(role).format(i=i))

            def hook(module: Any, args: tuple[Any, ...], output: Any, key: tuple[int, str] = (i, role)) -> None:
                captured[key] = (args[0].detach().numpy().copy(), output.detach().numpy().copy())

            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            outputs = model(**inputs, output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    return [
        LayerTrace(
            x=captured[i, family.attention_input][0],
            probs=outputs.attentions[i].numpy(),
            context=captured[i, "attn_out"][0],
            attn_out=captured[i, "attn_out"][1],
            mlp_x=captured[i, family.mlp_input][0],
            mlp_out=captured[i, "ffn_out"][1],
        )
        for i in range(layers)
    ]


def _left_out(model: Any, family: Family) -> None:
    """Switch off, in the copy that runs, what the proxies leave out and the checks cannot see past:
    query/key norms, a logit softcap, a clamp (``Family.parity_off``, ``Family.parity_config``)."""
    import torch

    for name, value in (family.parity_config or {}).items():
        setattr(model.config, name, value)
    for i in range(model.config.num_hidden_layers):
        for path, value in (family.parity_off or {}).items():
            parent, _, attribute = f"{family.module_layers or family.layers}.{i}.{path}".rpartition(".")
            module = model.base_model.get_submodule(parent)
            assert hasattr(module, attribute), f"{family.name}: no {attribute} in {parent}"
            setattr(module, attribute, torch.nn.Identity() if value == IDENTITY else value)


@contextlib.contextmanager
def _position_free(family: Family) -> Iterator[None]:
    """ALiBi families run with a zero bias: the position-free slice, as rotary ones run at position 0."""
    if not family.alibi:
        yield
        return
    import torch

    def zero_alibi(attention_mask: torch.Tensor, num_heads: int, dtype: torch.dtype) -> torch.Tensor:
        batch, tokens = attention_mask.shape
        return torch.zeros(batch * num_heads, 1, tokens, dtype=dtype)

    with mock.patch(f"{family.alibi}.build_alibi_tensor", zero_alibi):
        yield


def trace(built: Built) -> Trace:
    """Run the model in float64 on a sequence (and a single token); read specbound's weights from the file."""
    model = copy.deepcopy(built.model).double().eval()
    model.set_attn_implementation("eager")
    family = built.family
    _left_out(model, family)
    checkpoint = open_checkpoint(built.dirs["safetensors"])
    layers = built.config.num_hidden_layers
    with _position_free(family):
        return Trace(
            built,
            checkpoint.shape,
            [checkpoint.layer(i) for i in range(layers)],
            _run(model, family, _inputs(built, TOKENS)),
            None if family.vision else _run(model, family, _inputs(built, 1)),
            [_softmax_scale(built, i) for i in range(layers)],
        )


@pytest.fixture(scope="module")
def traced(tiny: Callable[[str], Built]) -> Callable[[str], Trace]:
    done: dict[str, Trace] = {}

    def get(name: str) -> Trace:
        if name not in done:
            done[name] = trace(tiny(name))
        return done[name]

    return get


# --- the checks -----------------------------------------------------------------------------------


def _relative(predicted: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(predicted - reference)) / np.max(np.abs(reference)))


def _activation(name: str, z: np.ndarray) -> np.ndarray:
    import torch
    from transformers.activations import ACT2FN

    if name == "bloom_gelu":  # BloomGelu: the tanh approximation with its own rounded constant
        from transformers.models.bloom.modeling_bloom import bloom_gelu_forward

        bloom: np.ndarray = bloom_gelu_forward(torch.from_numpy(z)).numpy()
        return bloom
    activated: np.ndarray = ACT2FN[name](torch.from_numpy(z)).numpy()
    return activated


def parity_errors(trace: Trace, factors: list[LayerFactors]) -> dict[str, float]:
    """The largest relative error of each check over the layers: qk, v_heads, v_out and mlp."""
    family = trace.built.family
    errors = dict.fromkeys(("qk", "v_heads", "v_out", "mlp"), 0.0)
    for layer, f, scale in zip(trace.layers, factors, trace.scales, strict=True):
        x, probs = layer.x, layer.probs
        heads = f.qk_left.shape[0]
        logits = scale * np.einsum("bin,hnm,bjm->bhij", x, f.qk(), x)  # (B, H, T, T)
        with np.errstate(divide="ignore"):  # masked probabilities are exact zeros
            log_probs = np.log(probs)  # (B, H, T, T)
        keep = np.ones(probs.shape[-2:], dtype=bool)  # (T, T): the pairs the mask allows
        keep = np.tril(keep) if family.causal else keep
        reference = (log_probs - log_probs[..., :1])[..., keep]  # (B, H, allowed pairs)
        predicted = (logits - logits[..., :1])[..., keep]
        errors["qk"] = max(errors["qk"], _relative(predicted, reference))

        batch, tokens, _ = layer.context.shape
        context = layer.context.reshape(batch, tokens, heads, -1).transpose(0, 2, 1, 3)  # (B, H, T, d)
        per_head = np.einsum("bhij,bjn,hnd->bhid", probs, x, f.v_left)  # (B, H, T, d)
        errors["v_heads"] = max(errors["v_heads"], _relative(per_head, context))
        output = np.einsum("bhij,bjn,hnm->bim", probs, x, f.v())  # (B, T, N)
        errors["v_out"] = max(errors["v_out"], _relative(output, layer.attn_out))

        z = layer.mlp_x @ f.mlp[Kind.M_IN]  # (B, T, d_ff)
        if family.gated:
            hidden = _activation(family.activation, layer.mlp_x @ f.mlp[Kind.M_GATE]) * z
        else:
            hidden = _activation(family.activation, z)
        errors["mlp"] = max(errors["mlp"], _relative(hidden @ f.mlp[Kind.M_OUT], layer.mlp_out))
    return errors


def assert_fails(errors: dict[str, float], *checks: str) -> None:
    for check in checks:
        assert errors[check] > FAIL, f"the wrong reading passed the {check} check: {errors}"


# --- the right reading ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FAMILIES)
def test_proxy_matrices_reproduce_the_hugging_face_forward_pass(traced: Callable[[str], Trace], name: str) -> None:
    trace = traced(name)
    errors = parity_errors(trace, trace.factors)
    assert all(errors[check] < PASS[check] for check in PASS), errors
    # the check has something to see: attention is far from uniform, the MLP far from zero
    assert np.ptp(np.log(trace.layers[0].probs[:, :, -1, :])) > 0.1
    assert np.abs(trace.layers[0].mlp_out).max() > 0.1


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if not f.vision])
def test_one_token_attention_output_is_the_sum_of_the_v_matrices(traced: Callable[[str], Trace], name: str) -> None:
    """With one token the attention weight is 1, so the output projection gives Σ_h x V_h exactly."""
    trace = traced(name)
    assert trace.one_token is not None
    for layer, f in zip(trace.one_token, trace.factors, strict=True):
        np.testing.assert_array_equal(layer.probs, 1.0)
        output = np.einsum("btn,hnm->btm", layer.x, f.v())  # (B, 1, N)
        assert _relative(output, layer.attn_out) < PASS["v_out"]
        wrong = np.einsum("btn,hnm->btm", layer.x, _roll(f.v_left) @ f.v_right)  # values of the next head
        if f.v_left.shape[0] > 1 and not np.array_equal(_roll(f.v_left), f.v_left):
            assert _relative(wrong, layer.attn_out) > FAIL


# --- wrong readings fail the same check -------------------------------------------------------------


def _roll(array: np.ndarray) -> np.ndarray:
    """Query head h takes what belongs to head h + 1 (mod H)."""
    return np.roll(array, -1, axis=0)  # (H, ...)


@pytest.mark.parametrize("name", FAMILIES)
def test_heads_rolled_by_one_fail(traced: Callable[[str], Trace], name: str) -> None:
    trace = traced(name)
    rolled = [
        dataclasses.replace(
            f, qk_left=_roll(f.qk_left), qk_right=_roll(f.qk_right), v_left=_roll(f.v_left), v_right=_roll(f.v_right)
        )
        for f in trace.factors
    ]
    errors = parity_errors(trace, rolled)
    # v_out too: head h's probabilities now weight head h + 1's values (v_heads only when H_kv > 1)
    assert_fails(errors, "qk", "v_out")


@pytest.mark.parametrize("name", FAMILIES)
def test_output_projection_of_the_next_head_fails(traced: Callable[[str], Trace], name: str) -> None:
    trace = traced(name)
    shifted = [dataclasses.replace(f, v_right=_roll(f.v_right)) for f in trace.factors]
    errors = parity_errors(trace, shifted)
    assert_fails(errors, "v_out")
    assert errors["qk"] < PASS["qk"]  # only V was read wrongly


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if f.layout == "neox"])
def test_neox_fused_qkv_read_as_three_blocks_fails(traced: Callable[[str], Trace], name: str) -> None:
    """Rebuild the stored fused weight from the canonical heads, then split it into Q | K | V row blocks."""
    trace = traced(name)
    shape = trace.shape
    h, d, n = shape.num_heads, shape.head_dim, shape.hidden_size
    wrong: list[LayerFactors] = []
    for w in trace.weights:
        heads = [m.reshape(h, d, n) for m in (w.query, w.key, w.value)]  # 3 x (H, d, N)
        fused = np.stack(heads, axis=1).reshape(3 * n, n)  # (H, 3, d, N) -> (3N, N), as stored
        np.testing.assert_array_equal(fused, _stored(trace, "qkv", len(wrong)))
        query, key, value = np.split(fused, 3, axis=0)  # 3 x (N, N)
        blocks = dataclasses.replace(w, query=query, key=key, value=value)
        wrong.append(layer_factors(blocks, shape))
    assert_fails(parity_errors(trace, wrong), "qk", "v_heads")


def _stored(trace: Trace, role: str, layer: int) -> np.ndarray:
    """A layer's weight as the checkpoint stores it, from the model in memory."""
    module = trace.built.model.base_model.get_submodule(trace.built.family.module(role).format(i=layer))
    stored: np.ndarray = module.weight.detach().double().numpy()
    return stored


@pytest.mark.parametrize(
    "name",
    [
        n
        for n, f in FAMILIES.items()
        if 1 < f.config.get("num_key_value_heads", f.config.get("num_kv_heads", 0)) < f.config["num_attention_heads"]
    ],
)
def test_grouped_query_heads_by_modulo_fail(traced: Callable[[str], Trace], name: str) -> None:
    """Query head h reading key/value head h mod H_kv (interleaved groups) instead of ⌊h / (H / H_kv)⌋."""
    trace = traced(name)
    shape = trace.shape
    kv, d, n = shape.num_kv_heads, shape.head_dim, shape.hidden_size
    group = np.arange(shape.num_heads) % kv  # (H,)
    assert not np.array_equal(group, [shape.kv_head(h) for h in range(shape.num_heads)])
    wrong = []
    for w, f in zip(trace.weights, trace.factors, strict=True):
        keys = w.key.reshape(kv, d, n)[group]  # (H_kv, d, N) -> (H, d, N)
        values = w.value.reshape(kv, d, n)[group].transpose(0, 2, 1)  # (H, N, d)
        wrong.append(dataclasses.replace(f, qk_right=keys, v_left=values))
    assert_fails(parity_errors(trace, wrong), "qk", "v_heads", "v_out")


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if f.gated])
def test_gate_and_up_swapped_fail(traced: Callable[[str], Trace], name: str) -> None:
    trace = traced(name)
    swapped = [layer_factors(dataclasses.replace(w, gate=w.ffn_in, ffn_in=w.gate), trace.shape) for w in trace.weights]
    errors = parity_errors(trace, swapped)
    assert_fails(errors, "mlp")
    assert errors["qk"] < PASS["qk"] and errors["v_out"] < PASS["v_out"]


@pytest.mark.parametrize("name", [n for n, f in FAMILIES.items() if f.layout == "phi3"])
def test_phi3_fused_weights_read_the_other_way_fail(traced: Callable[[str], Trace], name: str) -> None:
    """Phi-3's stored gate_up_proj read as up | gate (gate and up swapped), and its qkv_proj read as
    if interleaved per key/value group (each group's queries, then its key, then its value), fail."""
    trace = traced(name)
    shape = trace.shape
    kv, d, n, f = shape.num_kv_heads, shape.head_dim, shape.hidden_size, shape.ffn_size
    group = shape.queries_per_kv_head
    swapped, regrouped = [], []
    for i, w in enumerate(trace.weights):
        gate_up = _stored(trace, "gate_up", i)  # (2 d_ff, N)
        np.testing.assert_array_equal(gate_up, np.concatenate([w.gate, w.ffn_in]))
        swapped.append(layer_factors(dataclasses.replace(w, gate=gate_up[f:], ffn_in=gate_up[:f]), shape))
        qkv = _stored(trace, "qkv", i).reshape(kv, group + 2, d, n)  # the wrong view
        query, key, value = qkv[:, :group].reshape(-1, n), qkv[:, group].reshape(-1, n), qkv[:, -1].reshape(-1, n)
        regrouped.append(layer_factors(dataclasses.replace(w, query=query, key=key, value=value), shape))
    errors = parity_errors(trace, swapped)
    assert_fails(errors, "mlp")
    assert errors["qk"] < PASS["qk"] and errors["v_out"] < PASS["v_out"]
    assert_fails(parity_errors(trace, regrouped), "qk", "v_heads")


@pytest.mark.parametrize(
    "name", [n for n, f in FAMILIES.items() if f.layout == "falcon" and f.config.get("new_decoder_architecture")]
)
def test_falcon_groups_read_as_blocks_or_per_head_fail(traced: Callable[[str], Trace], name: str) -> None:
    """Falcon's new-architecture query_key_value, (H_kv, H / H_kv + 2, d, N) by group, read as if its
    rows were Q (H d) | K (H_kv d) | V (H_kv d) blocks (Phi-3's layout), or as if each group's rows were
    one query head's (q, k, v) triple after another (the per-head reading, group by group), fails."""
    trace = traced(name)
    shape = trace.shape
    h, kv, d, n = shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.hidden_size
    group = shape.queries_per_kv_head
    blocks, per_head = [], []
    for i, w in enumerate(trace.weights):
        fused = _stored(trace, "qkv", i)  # ((H + 2 H_kv) d, N)
        grouped = fused.reshape(kv, group + 2, d, n)
        np.testing.assert_array_equal(grouped[:, :group].reshape(h * d, n), w.query)
        query, key, value = fused[: h * d], fused[h * d : (h + kv) * d], fused[(h + kv) * d :]
        blocks.append(layer_factors(dataclasses.replace(w, query=query, key=key, value=value), shape))
        # each group's first three d-row blocks taken as query, key and value of one head per group
        triples = grouped[:, :3]  # (H_kv, 3, d, N)
        wrong_q = np.repeat(triples[:, 0], group, axis=0).reshape(h * d, n)
        wrong = dataclasses.replace(
            w, query=wrong_q, key=triples[:, 1].reshape(-1, n), value=triples[:, 2].reshape(-1, n)
        )
        per_head.append(layer_factors(wrong, shape))
    assert_fails(parity_errors(trace, blocks), "qk", "v_heads")
    assert_fails(parity_errors(trace, per_head), "qk", "v_heads")
