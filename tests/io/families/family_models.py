"""Tiny random checkpoints of every supported family, written by transformers' own ``save_pretrained``.

Each :class:`Family` says how to build a 2-layer model of that architecture with the head class a
user would have (``GPT2LMHeadModel``, ``LlamaForCausalLM``, ...), and, independently of specbound's
adapters, where its attention and MLP weights sit inside a layer and how they are laid out. The
tests use that description twice: to hook the Hugging Face modules during a forward pass, and to
read the proxy matrices from the state dict without going through specbound.

:func:`build` writes one model in every weight format specbound reads: a single
``model.safetensors``, sharded safetensors, a single ``pytorch_model.bin``, a sharded ``.bin`` with
its index, and the bare base model (its keys without the head's prefix). Every bias is zeroed
before saving, so the Hugging Face forward pass is the bias-free map the proxies describe.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from tiny_models import save_model, transformers_model

#: The weight formats of one model, in the order the tests list them.
FORMATS: tuple[str, ...] = ("safetensors", "sharded-safetensors", "bin", "sharded-bin", "bare")

#: Standard deviation of the random weights: ten times the usual 0.02, so attention logits are of
#: order one and a wrong head reading changes them visibly.
INIT_STD = 0.2

Layout = Literal["linear", "conv1d", "neox", "phi3", "falcon"]

#: a ``Family.parity_off`` value: the module is replaced by the identity for the parity run
IDENTITY = "identity"


@dataclass(frozen=True)
class Family:
    """One tiny model: how to build it, and where its weights live (module paths below one layer).

    ``weights`` maps a role to the module holding that weight: with the ``linear`` layout the roles
    query, key, value, attn_out, ffn_in, ffn_out (and gate for a gated MLP), each an ``nn.Linear``;
    with ``conv1d`` (GPT-2), ``neox`` (and BLOOM), ``phi3`` and ``falcon`` the fused role qkv replaces
    query, key and value; Phi-3's fused role gate_up replaces gate and ffn_in.

    What the proxies leave out and a parity check cannot see past is switched off in the copy the
    parity test runs (never in the saved checkpoint): ``parity_off`` maps an attribute below a layer
    (``self_attn.q_norm``) to its replacement (:data:`IDENTITY`, or a value such as None for a
    softcap), ``parity_config`` sets config fields (OLMo's ``clip_qkv``), and ``alibi`` names the
    modeling module whose ``build_alibi_tensor`` is replaced by zeros (the position-free slice).
    """

    name: str
    model_type: str
    config_class: str
    config: dict[str, Any]
    head_class: str
    layers: str  # the layer list inside the base model
    weights: dict[str, str]
    layout: Layout = "linear"
    activation: str = "gelu"
    causal: bool = False
    rotary: bool = False
    vision: bool = False
    base_class: str = ""  # the bare class that ``model.base_model`` is
    #: module names of the model in memory where they differ from the checkpoint's keys (transformers 5
    #: renames some modules when it loads, and renames them back when it saves)
    modules: dict[str, str] | None = None
    module_layers: str = ""
    parity_off: dict[str, Any] | None = None
    parity_config: dict[str, Any] | None = None
    alibi: str = ""

    @property
    def gated(self) -> bool:
        return "gate" in self.weights or "gate_up" in self.weights

    def module(self, role: str) -> str:
        """Path, below the base model, of the module holding a weight of the layer (``{i}`` for the layer)."""
        names = self.modules or self.weights
        return f"{self.module_layers or self.layers}.{{i}}.{names[role]}"

    @property
    def attention_input(self) -> str:
        """The role whose module's input is the layer's attention input (after its layer norm)."""
        return "query" if "query" in self.weights else "qkv"

    @property
    def mlp_input(self) -> str:
        return next(role for role in ("gate", "gate_up", "ffn_in") if role in self.weights)


def _encoder(hidden: int = 32, heads: int = 4, ffn: int = 64, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": 64,
        "num_hidden_layers": 2,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "max_position_embeddings": 40,
        "initializer_range": INIT_STD,
        **extra,
    }


def _decoder(hidden: int = 32, heads: int = 4, ffn: int = 64, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": 64,
        "num_hidden_layers": 2,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "max_position_embeddings": 32,
        "initializer_range": INIT_STD,
        **extra,
    }


_BERT_WEIGHTS = {
    "query": "attention.self.query",
    "key": "attention.self.key",
    "value": "attention.self.value",
    "attn_out": "attention.output.dense",
    "ffn_in": "intermediate.dense",
    "ffn_out": "output.dense",
}
_LLAMA_WEIGHTS = {
    "query": "self_attn.q_proj",
    "key": "self_attn.k_proj",
    "value": "self_attn.v_proj",
    "attn_out": "self_attn.o_proj",
    "gate": "mlp.gate_proj",
    "ffn_in": "mlp.up_proj",
    "ffn_out": "mlp.down_proj",
}


def _llama_like(
    name: str,
    model_type: str,
    prefix: str,
    activation: str = "silu",
    config_class: str = "",
    base_class: str = "",
    parity_off: dict[str, Any] | None = None,
    parity_config: dict[str, Any] | None = None,
    **sizes: Any,
) -> Family:
    return Family(
        name=name,
        model_type=model_type,
        config_class=config_class or f"{prefix}Config",
        config=_decoder(**sizes),
        head_class=f"{prefix}ForCausalLM",
        base_class=base_class or f"{prefix}Model",
        layers="layers",
        weights=_LLAMA_WEIGHTS,
        activation=activation,
        causal=True,
        rotary=True,
        parity_off=parity_off,
        parity_config=parity_config,
    )


_FALCON_WEIGHTS = {
    "qkv": "self_attention.query_key_value",
    "attn_out": "self_attention.dense",
    "ffn_in": "mlp.dense_h_to_4h",
    "ffn_out": "mlp.dense_4h_to_h",
}


def _falcon(name: str, **fields: Any) -> Family:
    alibi = fields.get("alibi", False)
    return Family(
        name,
        "falcon",
        "FalconConfig",
        {
            "vocab_size": 64,
            "num_hidden_layers": 2,
            "hidden_size": 32,
            "num_attention_heads": 4,
            "ffn_hidden_size": 64,
            "max_position_embeddings": 32,
            "initializer_range": INIT_STD,
            "bos_token_id": 0,
            "eos_token_id": 0,
            **fields,
        },
        "FalconForCausalLM",
        "h",
        _FALCON_WEIGHTS,
        layout="falcon",
        causal=True,
        rotary=not alibi,
        base_class="FalconModel",
        alibi="transformers.models.falcon.modeling_falcon" if alibi else "",
    )


#: the query and key norms the proxies leave out, switched off for the parity run
_QK_NORMS = {"self_attn.q_norm": IDENTITY, "self_attn.k_norm": IDENTITY}
_GEMMA: dict[str, Any] = {"activation": "gelu_pytorch_tanh", "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}


FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            "bert",
            "bert",
            "BertConfig",
            _encoder(),
            "BertForSequenceClassification",
            "encoder.layer",
            _BERT_WEIGHTS,
            base_class="BertModel",
        ),
        Family(
            "roberta",
            "roberta",
            "RobertaConfig",
            _encoder(hidden=48, heads=6, ffn=80),
            "RobertaForMaskedLM",
            "encoder.layer",
            _BERT_WEIGHTS,
            base_class="RobertaModel",
        ),
        Family(
            "xlm-roberta",
            "xlm-roberta",
            "XLMRobertaConfig",
            _encoder(heads=2),
            "XLMRobertaForSequenceClassification",
            "encoder.layer",
            _BERT_WEIGHTS,
            base_class="XLMRobertaModel",
        ),
        Family(
            "camembert",
            "camembert",
            "CamembertConfig",
            _encoder(heads=8, ffn=40),
            "CamembertForMaskedLM",
            "encoder.layer",
            _BERT_WEIGHTS,
            base_class="CamembertModel",
        ),
        Family(
            "electra",
            "electra",
            "ElectraConfig",
            _encoder(embedding_size=16),
            "ElectraForPreTraining",
            "encoder.layer",
            _BERT_WEIGHTS,
            base_class="ElectraModel",
        ),
        Family(
            "distilbert",
            "distilbert",
            "DistilBertConfig",
            {
                "vocab_size": 64,
                "n_layers": 2,
                "dim": 32,
                "n_heads": 4,
                "hidden_dim": 64,
                "max_position_embeddings": 40,
                "initializer_range": INIT_STD,
            },
            "DistilBertForSequenceClassification",
            "transformer.layer",
            {
                "query": "attention.q_lin",
                "key": "attention.k_lin",
                "value": "attention.v_lin",
                "attn_out": "attention.out_lin",
                "ffn_in": "ffn.lin1",
                "ffn_out": "ffn.lin2",
            },
            base_class="DistilBertModel",
        ),
        Family(
            "vit",
            "vit",
            "ViTConfig",
            {
                "num_hidden_layers": 2,
                "hidden_size": 32,
                "num_attention_heads": 4,
                "intermediate_size": 64,
                "image_size": 12,
                "patch_size": 4,
                "num_channels": 3,
                "initializer_range": INIT_STD,
            },
            "ViTForImageClassification",
            "encoder.layer",
            {
                **_BERT_WEIGHTS,
                "query": "attention.attention.query",
                "key": "attention.attention.key",
                "value": "attention.attention.value",
            },
            vision=True,
            base_class="ViTModel",
            modules={
                "query": "attention.q_proj",
                "attn_out": "attention.o_proj",
                "ffn_in": "mlp.fc1",
                "ffn_out": "mlp.fc2",
            },
            module_layers="layers",
        ),
        Family(
            "gpt2",
            "gpt2",
            "GPT2Config",
            {
                "vocab_size": 64,
                "n_layer": 2,
                "n_embd": 32,
                "n_head": 4,
                "n_positions": 32,
                "initializer_range": INIT_STD,
                "bos_token_id": 0,
                "eos_token_id": 0,
            },
            "GPT2LMHeadModel",
            "h",
            {"qkv": "attn.c_attn", "attn_out": "attn.c_proj", "ffn_in": "mlp.c_fc", "ffn_out": "mlp.c_proj"},
            layout="conv1d",
            activation="gelu_new",
            causal=True,
            base_class="GPT2Model",
        ),
        *(
            Family(
                name,
                "gpt_neox",
                "GPTNeoXConfig",
                _decoder(use_parallel_residual=parallel, rotary_pct=rotary_pct),
                "GPTNeoXForCausalLM",
                "layers",
                {
                    "qkv": "attention.query_key_value",
                    "attn_out": "attention.dense",
                    "ffn_in": "mlp.dense_h_to_4h",
                    "ffn_out": "mlp.dense_4h_to_h",
                },
                layout="neox",
                causal=True,
                rotary=True,
                base_class="GPTNeoXModel",
            )
            for name, parallel, rotary_pct in (("gpt_neox", True, 0.25), ("gpt_neox-sequential", False, 1.0))
        ),
        Family(
            "opt",
            "opt",
            "OPTConfig",
            {
                "vocab_size": 64,
                "num_hidden_layers": 2,
                "hidden_size": 32,
                "num_attention_heads": 4,
                "ffn_dim": 64,
                "word_embed_proj_dim": 16,
                "max_position_embeddings": 32,
                "init_std": INIT_STD,
            },
            "OPTForCausalLM",
            "decoder.layers",
            {
                "query": "self_attn.q_proj",
                "key": "self_attn.k_proj",
                "value": "self_attn.v_proj",
                "attn_out": "self_attn.out_proj",
                "ffn_in": "fc1",
                "ffn_out": "fc2",
            },
            activation="relu",
            causal=True,
            base_class="OPTModel",
        ),
        # H = 6 query heads on H_kv = 2: g(h) = h // 3 = 0,0,0,1,1,1 differs from h mod 2 = 0,1,0,1,0,1
        _llama_like("llama", "llama", "Llama", hidden=48, heads=6, ffn=64, num_key_value_heads=2),
        # an explicit head_dim: H d = 4 * 12 = 48 differs from N = 32
        _llama_like("llama-head-dim", "llama", "Llama", heads=4, num_key_value_heads=2, head_dim=12),
        _llama_like("mistral", "mistral", "Mistral", heads=4, num_key_value_heads=1),
        _llama_like("qwen2", "qwen2", "Qwen2", heads=4, num_key_value_heads=2),
        # an explicit head_dim and per-head q_norm/k_norm
        _llama_like("qwen3", "qwen3", "Qwen3", heads=4, num_key_value_heads=2, head_dim=12, parity_off=_QK_NORMS),
        # norms over the whole projections, H = 6 on H_kv = 2
        _llama_like("olmo2", "olmo2", "Olmo2", hidden=48, heads=6, num_key_value_heads=2, parity_off=_QK_NORMS),
        # a clamp of Q, K and V (inside the values' range, so that it matters), off for the parity run
        _llama_like(
            "olmo",
            "olmo",
            "Olmo",
            heads=4,
            num_key_value_heads=2,
            clip_qkv=0.5,
            pad_token_id=0,
            eos_token_id=0,
            parity_config={"clip_qkv": None},
        ),
        # multi-query attention with an explicit head_dim of 16: H d = 64 differs from N = 32
        _llama_like("gemma", "gemma", "Gemma", heads=4, num_key_value_heads=1, head_dim=16, **_GEMMA),
        # softcapped logits and a sliding window wider than the test's sequences, scale 1/√(query_pre_attn_scalar)
        _llama_like(
            "gemma2",
            "gemma2",
            "Gemma2",
            heads=4,
            num_key_value_heads=2,
            head_dim=12,
            attn_logit_softcapping=5.0,
            final_logit_softcapping=None,
            sliding_window=16,
            query_pre_attn_scalar=10,
            parity_off={"self_attn.attn_logit_softcapping": None},
            **_GEMMA,
        ),
        _llama_like(
            "gemma3_text",
            "gemma3_text",
            "Gemma3",
            config_class="Gemma3TextConfig",
            base_class="Gemma3TextModel",
            heads=4,
            num_key_value_heads=2,
            head_dim=16,
            sliding_window=16,
            query_pre_attn_scalar=16,
            parity_off=_QK_NORMS,
            **_GEMMA,
        ),
        # fused Q | K | V and gate | up, H = 6 on H_kv = 2 (Phi-3-style grouped-query)
        Family(
            "phi3",
            "phi3",
            "Phi3Config",
            _decoder(hidden=48, heads=6, num_key_value_heads=2, pad_token_id=0, bos_token_id=0, eos_token_id=0),
            "Phi3ForCausalLM",
            "layers",
            {
                "qkv": "self_attn.qkv_proj",
                "attn_out": "self_attn.o_proj",
                "gate_up": "mlp.gate_up_proj",
                "ffn_out": "mlp.down_proj",
            },
            layout="phi3",
            activation="silu",
            causal=True,
            rotary=True,
            base_class="Phi3Model",
        ),
        # half of each head rotated (the default partial_rotary_factor), one LayerNorm for both branches
        Family(
            "phi",
            "phi",
            "PhiConfig",
            _decoder(bos_token_id=0, eos_token_id=0),
            "PhiForCausalLM",
            "layers",
            {
                "query": "self_attn.q_proj",
                "key": "self_attn.k_proj",
                "value": "self_attn.v_proj",
                "attn_out": "self_attn.dense",
                "ffn_in": "mlp.fc1",
                "ffn_out": "mlp.fc2",
            },
            activation="gelu_new",
            causal=True,
            rotary=True,
            base_class="PhiModel",
        ),
        # rotary on the first 4 of each head's 8 features
        Family(
            "gptj",
            "gptj",
            "GPTJConfig",
            {
                "vocab_size": 64,
                "n_layer": 2,
                "n_embd": 32,
                "n_head": 4,
                "n_positions": 32,
                "rotary_dim": 4,
                "initializer_range": INIT_STD,
                "bos_token_id": 0,
                "eos_token_id": 0,
            },
            "GPTJForCausalLM",
            "h",
            {
                "query": "attn.q_proj",
                "key": "attn.k_proj",
                "value": "attn.v_proj",
                "attn_out": "attn.out_proj",
                "ffn_in": "mlp.fc_in",
                "ffn_out": "mlp.fc_out",
            },
            activation="gelu_new",
            causal=True,
            rotary=True,
            base_class="GPTJModel",
        ),
        # interleaved per head like GPT-NeoX's, ALiBi (zeroed for the parity run), BloomGelu
        Family(
            "bloom",
            "bloom",
            "BloomConfig",
            {
                "vocab_size": 64,
                "n_layer": 2,
                "hidden_size": 32,
                "n_head": 4,
                "initializer_range": INIT_STD,
                "bos_token_id": 0,
                "eos_token_id": 0,
            },
            "BloomForCausalLM",
            "h",
            _FALCON_WEIGHTS,
            layout="neox",
            activation="bloom_gelu",
            causal=True,
            base_class="BloomModel",
            alibi="transformers.models.bloom.modeling_bloom",
        ),
        # Falcon-40B's layout: groups of 3 query heads, then their key, then their value (H = 6, H_kv = 2)
        _falcon("falcon", hidden_size=48, num_attention_heads=6, num_kv_heads=2, new_decoder_architecture=True),
        # Falcon-7B's: 4 query heads, then one key and one value head
        _falcon("falcon-multi-query", multi_query=True, parallel_attn=True),
        # Falcon-RW's: interleaved per head, ALiBi, sequential blocks
        _falcon("falcon-alibi", multi_query=False, parallel_attn=False, alibi=True, bias=True),
    )
}


@dataclass(frozen=True)
class Built:
    """A family's tiny model (float32, biases zero) and its checkpoint directory per format."""

    family: Family
    model: Any  # the head model, a torch nn.Module
    dirs: dict[str, Path]

    @property
    def config(self) -> Any:
        return self.model.config


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def make_model(family: Family) -> Any:
    """A randomly initialised head model of ``family`` with every bias set to zero, in eval mode."""
    import torch

    model = transformers_model(family.config_class, family.head_class, family.config, seed=_seed(family.name))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                parameter.zero_()
    return model.eval()


def _save_bin(state: dict[str, Any], directory: Path, shards: int) -> None:
    """PyTorch pickles as transformers 4 wrote them: one file, or ``shards`` files and their index."""
    import torch

    for leftover in directory.glob("model*.safetensors*"):
        leftover.unlink()
    if shards == 1:
        torch.save(state, directory / "pytorch_model.bin")
        return
    names = list(state)
    weight_map = {}
    for k, part in enumerate(np.array_split(np.arange(len(names)), shards), start=1):
        file = f"pytorch_model-{k:05d}-of-{shards:05d}.bin"
        torch.save({names[i]: state[names[i]] for i in part}, directory / file)
        weight_map.update(dict.fromkeys((names[i] for i in part), file))
    total = sum(t.numel() * t.element_size() for t in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / "pytorch_model.bin.index.json").write_text(json.dumps(index, indent=1))


def build(family: Family, root: Path) -> Built:
    """Write ``family``'s tiny model under ``root`` in every format of :data:`FORMATS`."""
    model = make_model(family)
    dirs = {fmt: root / fmt for fmt in FORMATS}
    save_model(model, dirs["safetensors"])
    save_model(model, dirs["sharded-safetensors"], max_shard_size="16KB")
    shards = list(dirs["sharded-safetensors"].glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2, f"{family.name}: expected several safetensors shards, got {len(shards)}"
    # The keys exactly as transformers writes them (the in-memory names may differ, see Family.modules).
    from safetensors.torch import load_file

    state = load_file(dirs["safetensors"] / "model.safetensors")
    for fmt, shard_count in (("bin", 1), ("sharded-bin", 3)):
        model.config.save_pretrained(dirs[fmt])
        _save_bin(state, dirs[fmt], shard_count)
    assert type(model.base_model).__name__ == family.base_class
    save_model(model.base_model, dirs["bare"])
    return Built(family, model, dirs)


def save_each(make: Callable[[str], Any], names: Iterable[str], root: Path) -> dict[str, tuple[Any, Path]]:
    """name -> (model, directory): each ``make(name)`` written by its own ``save_pretrained`` to root/name."""
    saved = {}
    for name in names:
        model = make(name)
        save_model(model, root / name)
        saved[name] = (model, root / name)
    return saved


def layer_prefix(built: Built, fmt: str, layer: int) -> str:
    """The state-dict key prefix of one layer's weights in the checkpoint of format ``fmt``."""
    head = "" if fmt == "bare" else f"{built.model.base_model_prefix}."
    return f"{head}{built.family.layers}.{layer}."


def read_state(directory: Path) -> dict[str, np.ndarray]:
    """Every tensor of a single-file safetensors checkpoint as float64 arrays, read with torch."""
    from safetensors.torch import load_file

    return {name: tensor.double().numpy() for name, tensor in load_file(directory / "model.safetensors").items()}


@dataclass(frozen=True)
class Sizes:
    """Head counts and sizes as the Hugging Face config states them."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int

    @classmethod
    def of(cls, config: Any) -> Sizes:
        hidden, heads = config.hidden_size, config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        if config.model_type == "falcon":  # FalconAttention.num_kv_heads
            kv_heads = config.num_kv_heads if config.new_decoder_architecture else 1 if config.multi_query else heads
        head_dim = getattr(config, "head_dim", None) or hidden // heads
        return cls(hidden, heads, kv_heads, head_dim)


def _attention_weights(family: Family, weight: Any, sizes: Sizes, config: Any) -> tuple[np.ndarray, ...]:
    """W_Q, W_K, W_V (out, in) and W_O (out, in) from one layer's tensors, as the HF modules use them."""
    n, h, d = sizes.hidden, sizes.heads, sizes.head_dim
    if family.layout == "conv1d":
        # Conv1D computes x @ W + b with W (in, out) = (N, 3N): columns [0, N) give q, [N, 2N) k, [2N, 3N) v.
        fused = weight("qkv")
        return fused[:, :n].T, fused[:, n : 2 * n].T, fused[:, 2 * n :].T, weight("attn_out").T
    if family.layout == "neox":
        # The (3N, N) output features are viewed per head as (H, 3 d): feature h*3d + c*d + e is
        # part c (0 query, 1 key, 2 value), component e of head h.
        fused = weight("qkv")
        parts = [np.array([head * 3 * d + part * d + e for head in range(h) for e in range(d)]) for part in range(3)]
        return fused[parts[0]], fused[parts[1]], fused[parts[2]], weight("attn_out")
    if family.layout == "falcon":
        # FalconAttention._split_heads: the output features viewed as (H_kv, H / H_kv + 2, d) (the new
        # architecture), (H + 2, d) (multi-query: queries, one key, one value) or (H, 3, d) (per head).
        fused, kv = weight("qkv"), sizes.kv_heads
        if config.new_decoder_architecture:
            group = h // kv
            rows = np.arange(fused.shape[0]).reshape(kv, group + 2, d)
            q, k, v = rows[:, :group].reshape(-1), rows[:, group].reshape(-1), rows[:, group + 1].reshape(-1)
        elif config.multi_query:
            q, k, v = np.arange(h * d), np.arange(h * d, (h + 1) * d), np.arange((h + 1) * d, (h + 2) * d)
        else:
            rows = np.arange(fused.shape[0]).reshape(h, 3, d)
            q, k, v = rows[:, 0].reshape(-1), rows[:, 1].reshape(-1), rows[:, 2].reshape(-1)
        return fused[q], fused[k], fused[v], weight("attn_out")
    if family.layout == "phi3":
        # qkv_proj's output features: [0, H d) queries, then H_kv d keys, then H_kv d values.
        fused, q_end = weight("qkv"), h * d
        k_end = q_end + sizes.kv_heads * d
        return fused[:q_end], fused[q_end:k_end], fused[k_end:], weight("attn_out")
    return weight("query"), weight("key"), weight("value"), weight("attn_out")


def _gate_and_up(family: Family, weight: Any) -> tuple[np.ndarray, np.ndarray]:
    """The gate and up weights (out, in): Phi-3's gate_up_proj output is chunked in two, gate first."""
    if "gate_up" in family.weights:
        gate, up = np.split(weight("gate_up"), 2, axis=0)
        return gate, up
    return weight("gate"), weight("ffn_in")


def proxy_matrices(built: Built, state: dict[str, np.ndarray], fmt: str) -> list[tuple[str, int | None, np.ndarray]]:
    """Every proxy matrix formed densely from a state dict, in profile order: (kind, head, matrix).

    Written from the Hugging Face modules' own arithmetic, not from specbound: query head h reads
    key/value head h // (H / H_kv) (``repeat_kv``), and the attention output reads head h from its
    input columns [h d, (h + 1) d).
    """
    family, sizes = built.family, Sizes.of(built.config)
    h, d = sizes.heads, sizes.head_dim
    group = sizes.heads // sizes.kv_heads
    matrices: list[tuple[str, int | None, np.ndarray]] = []
    for layer in range(built.config.num_hidden_layers):
        prefix = layer_prefix(built, fmt, layer)

        def weight(role: str, prefix: str = prefix) -> np.ndarray:
            return state[f"{prefix}{family.weights[role]}.weight"]

        wq, wk, wv, wo = _attention_weights(family, weight, sizes, built.config)
        qk, v = [], []
        for head in range(h):
            s, g = slice(head * d, (head + 1) * d), slice(head // group * d, (head // group + 1) * d)
            qk.append(("QK", head, wq[s].T @ wk[g]))
            v.append(("V", head, wv[g].T @ wo[:, s].T))
        matrices += qk + v
        if family.layout == "conv1d":  # Conv1D stores (in, out): already the row-vector form
            mlp = {"M_in": weight("ffn_in"), "M_out": weight("ffn_out")}
        else:
            if family.gated:
                gate, up = _gate_and_up(family, weight)
                mlp = {"M_gate": gate.T, "M_in": up.T, "M_out": weight("ffn_out").T}
            else:
                mlp = {"M_in": weight("ffn_in").T, "M_out": weight("ffn_out").T}
        matrices += [(kind, None, matrix) for kind, matrix in mlp.items()]
    return matrices


def assert_matrix_tensors_exist(directory: Path) -> None:
    """Every key :meth:`~specbound.io.families.base.FamilyAdapter.matrix_tensors` names, for every proxy
    matrix of the checkpoint in ``directory``, is a tensor of its safetensors files below one of the
    family's prefixes (or, for experts stored fused, a matrix the adapter reads out of a fused tensor);
    its layer number is the matrix's layer within its stack."""
    from safetensors import safe_open

    from specbound.core.profile import matrix_ids
    from specbound.io.checkpoints import open_checkpoint

    checkpoint = open_checkpoint(directory)
    shape, adapter = checkpoint.shape, checkpoint.adapter
    keys: set[str] = set()
    for file in directory.glob("*.safetensors"):
        with safe_open(str(file), "np") as f:
            keys |= set(f.keys())
    keys |= set(adapter.fused_slices(sorted(keys), shape))
    for matrix in matrix_ids(shape):
        names = adapter.matrix_tensors(shape, matrix)
        assert names and len(set(names)) == len(names), matrix.label
        layer = matrix.layer if matrix.stack_layer is None else matrix.stack_layer
        for tensor in names:
            assert f".{layer}." in tensor, (matrix.label, tensor)
            assert any(key.endswith(tensor) and key[: -len(tensor)] in adapter.prefixes for key in keys), (
                matrix.label,
                tensor,
            )
