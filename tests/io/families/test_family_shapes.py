"""What each family's config.json becomes: sizes, heads, MLP and residual layout, activation, L_φ and
the adaptations the outputs name (SPEC §11), read from checkpoints written by transformers and from
the older config keys still found on the Hub (``rotary_pct``, no ``num_key_value_heads``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from family_models import Built

from specbound.core.architecture import Adaptation, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.io.checkpoints import open_checkpoint
from specbound.io.loading import load_profile

CAUSAL, ROTARY, PARTIAL = Adaptation.CAUSAL, Adaptation.ROTARY, Adaptation.PARTIAL_ROTARY
GQA, GATED, PARALLEL = Adaptation.GROUPED_QUERY, Adaptation.GATED_MLP, Adaptation.PARALLEL_RESIDUAL
LLAMA = (CAUSAL, ROTARY, GQA, GATED)
ALIBI = Adaptation.ALIBI
QK_NORM, CLIPPED, SOFTCAP, WINDOW = (
    Adaptation.QK_NORM,
    Adaptation.CLIPPED_QKV,
    Adaptation.SOFTCAPPING,
    Adaptation.SLIDING_WINDOW,
)

#: name -> (adapter label, family, N, H, H_kv, d, d_ff, mlp, residual, activation, L_φ, adaptations)
EXPECTED = {
    "bert": ("BERT", "bert", 32, 4, 4, 8, 64, "plain", "sequential", "gelu", 1.13, ()),
    "roberta": ("BERT", "roberta", 48, 6, 6, 8, 80, "plain", "sequential", "gelu", 1.13, ()),
    "xlm-roberta": ("BERT", "xlm-roberta", 32, 2, 2, 16, 64, "plain", "sequential", "gelu", 1.13, ()),
    "camembert": ("BERT", "camembert", 32, 8, 8, 4, 40, "plain", "sequential", "gelu", 1.13, ()),
    "electra": ("BERT", "electra", 32, 4, 4, 8, 64, "plain", "sequential", "gelu", 1.13, ()),
    "distilbert": ("DistilBERT", "distilbert", 32, 4, 4, 8, 64, "plain", "sequential", "gelu", 1.13, ()),
    "vit": ("ViT", "vit", 32, 4, 4, 8, 64, "plain", "sequential", "gelu", 1.13, ()),
    "gpt2": ("GPT-2", "gpt2", 32, 4, 4, 8, 128, "plain", "sequential", "gelu_new", 1.13, (CAUSAL,)),
    "gpt_neox": (
        "GPT-NeoX",
        "gpt_neox",
        32,
        4,
        4,
        8,
        64,
        "plain",
        "parallel",
        "gelu",
        1.13,
        (CAUSAL, PARTIAL, PARALLEL),
    ),
    "gpt_neox-sequential": (
        "GPT-NeoX",
        "gpt_neox",
        32,
        4,
        4,
        8,
        64,
        "plain",
        "sequential",
        "gelu",
        1.13,
        (CAUSAL, ROTARY),
    ),
    "opt": ("OPT", "opt", 32, 4, 4, 8, 64, "plain", "sequential", "relu", 1.0, (CAUSAL,)),
    "llama": ("Llama", "llama", 48, 6, 2, 8, 64, "gated", "sequential", "silu", 1.0998, LLAMA),
    "llama-head-dim": ("Llama", "llama", 32, 4, 2, 12, 64, "gated", "sequential", "silu", 1.0998, LLAMA),
    "mistral": ("Llama", "mistral", 32, 4, 1, 8, 64, "gated", "sequential", "silu", 1.0998, LLAMA),
    "qwen2": ("Llama", "qwen2", 32, 4, 2, 8, 64, "gated", "sequential", "silu", 1.0998, LLAMA),
    "qwen3": ("Qwen3", "qwen3", 32, 4, 2, 12, 64, "gated", "sequential", "silu", 1.0998, (*LLAMA, QK_NORM)),
    "olmo2": ("OLMo-2", "olmo2", 48, 6, 2, 8, 64, "gated", "sequential", "silu", 1.0998, (*LLAMA, QK_NORM)),
    "olmo": ("OLMo", "olmo", 32, 4, 2, 8, 64, "gated", "sequential", "silu", 1.0998, (*LLAMA, CLIPPED)),
    "gemma": ("Gemma", "gemma", 32, 4, 1, 16, 64, "gated", "sequential", "gelu_pytorch_tanh", 1.13, LLAMA),
    "gemma2": (
        "Gemma",
        "gemma2",
        32,
        4,
        2,
        12,
        64,
        "gated",
        "sequential",
        "gelu_pytorch_tanh",
        1.13,
        (*LLAMA, SOFTCAP, WINDOW),
    ),
    "gemma3_text": (
        "Gemma",
        "gemma3_text",
        32,
        4,
        2,
        16,
        64,
        "gated",
        "sequential",
        "gelu_pytorch_tanh",
        1.13,
        (*LLAMA, WINDOW, QK_NORM),
    ),
    "phi3": ("Phi-3", "phi3", 48, 6, 2, 8, 64, "gated", "sequential", "silu", 1.0998, LLAMA),
    "phi": ("Phi", "phi", 32, 4, 4, 8, 64, "plain", "parallel", "gelu_new", 1.13, (CAUSAL, PARTIAL, PARALLEL)),
    "bloom": ("BLOOM", "bloom", 32, 4, 4, 8, 128, "plain", "sequential", "gelu_new", 1.13, (CAUSAL, ALIBI)),
    "falcon": ("Falcon", "falcon", 48, 6, 2, 8, 64, "plain", "parallel", "gelu", 1.13, (CAUSAL, ROTARY, GQA, PARALLEL)),
    "falcon-multi-query": (
        "Falcon",
        "falcon",
        32,
        4,
        1,
        8,
        64,
        "plain",
        "parallel",
        "gelu",
        1.13,
        (CAUSAL, ROTARY, GQA, PARALLEL),
    ),
    "falcon-alibi": ("Falcon", "falcon", 32, 4, 4, 8, 64, "plain", "sequential", "gelu", 1.13, (CAUSAL, ALIBI)),
    "gptj": ("GPT-J", "gptj", 32, 4, 4, 8, 128, "plain", "parallel", "gelu_new", 1.13, (CAUSAL, PARTIAL, PARALLEL)),
}


@pytest.mark.parametrize("name", EXPECTED)
def test_shape_read_from_the_config(tiny: Callable[[str], Built], name: str) -> None:
    label, family, n, h, kv, d, ffn, mlp, residual, activation, l_phi, adaptations = EXPECTED[name]
    checkpoint = open_checkpoint(tiny(name).dirs["safetensors"])
    shape = checkpoint.shape
    assert checkpoint.adapter.label == label
    assert (shape.family, shape.num_layers, shape.hidden_size, shape.num_heads) == (family, 2, n, h)
    assert (shape.num_kv_heads, shape.head_dim, shape.ffn_size) == (kv, d, ffn)
    assert (shape.mlp.value, shape.residual.value, shape.activation) == (mlp, residual, activation)
    assert shape.l_phi == l_phi
    assert shape.adaptations == adaptations
    assert shape.num_matrices == 2 * (2 * h + (3 if mlp == "gated" else 2))
    assert [shape.kv_head(q) for q in range(h)] == [q // (h // kv) for q in range(h)]


@pytest.mark.parametrize("name", ["opt", "llama", "gpt_neox"])
def test_the_bound_uses_the_family_activation_constant(tiny: Callable[[str], Built], name: str) -> None:
    analysis = BoundAnalysis.from_profile(load_profile(str(tiny(name).dirs["safetensors"]), use_cache=False))
    assert analysis.l_phi == EXPECTED[name][10]


def _with_config(
    tiny: Callable[[str], Built], name: str, tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> ModelShape:
    """The shape of a copy of a built checkpoint whose config.json was rewritten by ``edit(config)``."""
    directory = tmp_path / name
    shutil.copytree(tiny(name).dirs["safetensors"], directory)
    config = json.loads((directory / "config.json").read_text())
    edit(config)
    (directory / "config.json").write_text(json.dumps(config))
    return open_checkpoint(directory).shape


@pytest.mark.parametrize(("rotary_pct", "rotary"), [(0.25, PARTIAL), (1.0, ROTARY)])
def test_neox_configs_with_the_older_rotary_pct_key(
    tiny: Callable[[str], Built], tmp_path: Path, rotary_pct: float, rotary: Adaptation
) -> None:
    def legacy(config: dict[str, Any]) -> None:
        del config["rope_parameters"]
        config["rotary_pct"] = rotary_pct

    shape = _with_config(tiny, "gpt_neox", tmp_path, legacy)
    assert shape.adaptations == (CAUSAL, rotary, PARALLEL)


def test_neox_parallel_residual_defaults_to_true(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "gpt_neox-sequential", tmp_path, lambda config: config.pop("use_parallel_residual"))
    assert shape.residual.value == "parallel" and PARALLEL in shape.adaptations


def test_llama_config_without_kv_heads_has_one_per_query_head(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    def multi_head(config: dict[str, Any]) -> None:
        del config["num_key_value_heads"]

    # the weights still have H_kv = 2 heads, so only the shape is read here, not a layer
    shape = _with_config(tiny, "qwen2", tmp_path, multi_head)
    assert shape.num_kv_heads == shape.num_heads == 4
    assert shape.adaptations == (CAUSAL, ROTARY, GATED)


def test_olmo_without_clip_qkv_has_no_clamp(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "olmo", tmp_path, lambda config: config.update(clip_qkv=None))
    assert shape.adaptations == LLAMA


def test_gemma2_without_softcapping_and_window(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    def plain(config: dict[str, Any]) -> None:
        config.update(attn_logit_softcapping=None, layer_types=["full_attention"] * 2)

    assert _with_config(tiny, "gemma2", tmp_path, plain).adaptations == LLAMA


def test_gemma_bad_softcap_is_refused_naming_the_field(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    from specbound.core.errors import CheckpointError

    with pytest.raises(CheckpointError, match="'attn_logit_softcapping'"):
        _with_config(tiny, "gemma2", tmp_path, lambda config: config.update(attn_logit_softcapping="big"))


def test_embedding_gemma_is_not_causal(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "gemma3_text", tmp_path, lambda config: config.update(use_bidirectional_attention=True))
    assert CAUSAL not in shape.adaptations and ROTARY in shape.adaptations


def test_phi3_partial_rotary_factor(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    def partial(config: dict[str, Any]) -> None:
        config.setdefault("rope_parameters", {})["partial_rotary_factor"] = 0.75

    assert _with_config(tiny, "phi3", tmp_path, partial).adaptations == (CAUSAL, PARTIAL, GQA, GATED)


def test_gptj_rotary_on_every_feature_when_rotary_dim_is_null(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "gptj", tmp_path, lambda config: config.update(rotary_dim=None))
    assert shape.adaptations == (CAUSAL, ROTARY, PARALLEL)


def test_phi_qk_layernorm_is_named(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "phi", tmp_path, lambda config: config.update(qk_layernorm=True))
    assert shape.adaptations == (CAUSAL, PARTIAL, PARALLEL, QK_NORM)


def test_falcon_configs_with_the_older_keys(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    """Falcon-RW and the first Falcon-40B configs name the heads n_head and n_head_kv, the layers n_layer."""

    def legacy(config: dict[str, Any]) -> None:
        config["n_head"], config["n_head_kv"] = config.pop("num_attention_heads"), config.pop("num_kv_heads")
        config["n_layer"] = config.pop("num_hidden_layers")

    shape = _with_config(tiny, "falcon", tmp_path, legacy)
    assert (shape.num_layers, shape.num_heads, shape.num_kv_heads) == (2, 6, 2)


def test_gpt2_inner_size_from_n_inner(tiny: Callable[[str], Built], tmp_path: Path) -> None:
    shape = _with_config(tiny, "gpt2", tmp_path, lambda config: config.update(n_inner=96))
    assert shape.ffn_size == 96


def test_phi3_fused_gate_up_counts_as_the_mlp_in_the_layer_peak(tiny: Callable[[str], Built]) -> None:
    """The per-layer memory peak reads Phi-3's fused gate_up as one MLP tensor, not as attention."""
    from specbound.core.limits import layer_peak_bytes
    from specbound.io.checkpoints import stored_shapes

    checkpoint = open_checkpoint(tiny("phi3").dirs["safetensors"])
    adapter, shape = checkpoint.adapter, checkpoint.shape
    assert adapter.mlp_tensor_roles(shape) == {"gate_up", "ffn_out"}
    assert adapter.attention_roles(shape) == ("qkv", "attn_out")
    n, f, d = shape.hidden_size, shape.ffn_size, shape.head_dim
    attention = (shape.num_heads + 2 * shape.num_kv_heads) * d * n + n * shape.num_heads * d
    expected = 8 * max(attention, 2 * f * n + 2 * min(n, f) ** 2)
    assert layer_peak_bytes(shape, stored_shapes(adapter, shape), adapter.mlp_tensor_roles(shape)) == expected


@pytest.mark.parametrize("name", EXPECTED)
def test_every_matrix_names_the_checkpoint_tensors_it_is_built_from(tiny: Callable[[str], Built], name: str) -> None:
    """Analysis frames carry the module names a notebook user knows (TransformerLens, the checkpoint)."""
    from family_models import assert_matrix_tensors_exist

    assert_matrix_tensors_exist(tiny(name).dirs["safetensors"])
