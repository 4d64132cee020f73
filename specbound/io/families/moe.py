"""Mixtures of experts (SPEC §12): Mixtral, Qwen2-MoE (with its shared expert), Qwen3-MoE and OLMoE.

Each layer is Llama's attention (rotary, grouped-query, under Llama's names) and, in place of one
gated MLP, E routed experts, each a gated MLP with its own gate, up and down ``nn.Linear`` weights,
plus (Qwen2-MoE) a shared expert that every token passes through behind a sigmoid gate. The router
(``gate``) and the shared expert's gate are not proxy matrices: with the router held fixed
(:attr:`~specbound.core.architecture.Adaptation.ROUTER_FIXED`) their outputs are given weights.

Two layouts of the experts, read as one:

- **as the Hub and ``save_pretrained`` store them**, one tensor per expert and weight, e.g.
  ``block_sparse_moe.experts.{e}.w1.weight`` (Mixtral: w1 the gate, w3 the up, w2 the down
  projection) or ``mlp.experts.{e}.gate_proj.weight`` (the others), which is the layout this adapter
  declares, so that a large layer streams expert by expert;
- **as transformers holds them in memory**, fused over the experts: ``mlp.experts.gate_up_proj`` of
  shape (E, 2 d_ff, N), rows [0, d_ff) the gate and [d_ff, 2 d_ff) the up projection of each
  expert (``linear(x, gate_up_proj[e]).chunk(2)`` gives ``gate, up``), and ``mlp.experts.down_proj``
  (E, N, d_ff), which transformers also writes to disk with ``save_original_format=False``.
  :meth:`MoeAdapter.fused_slices` names each expert's slice of those tensors under the stored
  layout's keys; a model in memory reads it as a view, a checkpoint on disk from a memory map, one
  expert at a time (:class:`~specbound.io.checkpoints.tensors.SlicedTensors`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np

from ...core.architecture import SHARED_EXPERT, Adaptation, Expert, Kind, ModelShape
from ...core.errors import UnsupportedModelError
from ...core.matrices import LayerWeights, mlp_field
from .base import TensorSlice, TensorSpec
from .config import build_shape, optional_int, optional_positive, positive_int, sliding_window
from .llama import LlamaAdapter

#: The stored name of each MLP kind's weight in an expert, by naming scheme.
_LLAMA_NAMES = {Kind.M_GATE: "gate_proj", Kind.M_IN: "up_proj", Kind.M_OUT: "down_proj"}
_MIXTRAL_NAMES = {Kind.M_GATE: "w1", Kind.M_IN: "w3", Kind.M_OUT: "w2"}
_ATTENTION = ("query", "key", "value", "attn_out")


class MoeAdapter(LlamaAdapter):
    """Llama's attention with E routed gated experts per layer (and optionally a shared one)."""

    model_types: ClassVar[tuple[str, ...]] = ("olmoe",)
    label = "OLMoE"
    reads_experts = True
    #: where the experts live below a layer: ``{experts}.{e}.{name}.weight``
    experts_key: ClassVar[str] = "mlp.experts"
    expert_names: ClassVar[Mapping[Kind, str]] = _LLAMA_NAMES
    #: the config fields of the routed experts' count (the first present; transformers may save its
    #: own name for a field the Hub's configs name otherwise) and width
    experts_fields: ClassVar[tuple[str, ...]] = ("num_experts", "num_local_experts")
    expert_size_field: ClassVar[str] = "intermediate_size"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        """OLMoE normalises queries and keys over the whole projection and may clamp Q, K and V."""
        clipped = (Adaptation.CLIPPED_QKV,) if optional_positive(config, "clip_qkv", where) is not None else ()
        return (Adaptation.QK_NORM, *clipped)

    def shared_expert_size(self, config: Mapping[str, Any], where: str) -> int:
        """d_ff of the shared expert, 0 for none."""
        return 0

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        dense = super().shape(config, where)
        _refuse_dense_layers(config, where)
        return build_shape(
            where,
            num_layers=dense.num_layers,
            hidden_size=dense.hidden_size,
            num_heads=dense.num_heads,
            ffn_size=positive_int(config, self.expert_size_field, where),
            num_kv_heads=dense.num_kv_heads,
            head_dim=dense.head_dim,
            mlp=dense.mlp,
            family=dense.family,
            activation=dense.activation,
            adaptations=(*dense.adaptations, Adaptation.ROUTER_FIXED),
            initializer_range=dense.initializer_range,
            num_experts=positive_int(config, _first_present(config, self.experts_fields), where),
            experts_per_token=positive_int(config, "num_experts_per_tok", where),
            shared_expert_size=self.shared_expert_size(config, where),
        )

    def expert_key(self, expert: Expert, kind: Kind) -> str:
        """The stored name of one expert's weight below its layer."""
        if expert == SHARED_EXPERT:
            return f"mlp.shared_expert.{_LLAMA_NAMES[kind]}.weight"
        return f"{self.experts_key}.{expert}.{self.expert_names[kind]}.weight"

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        expected = LayerWeights.expected_shapes(shape)
        specs = {role: TensorSpec(self.names[role], expected[role]) for role in _ATTENTION}
        for expert in shape.experts:
            for kind in shape.layer_kinds:
                field = mlp_field(kind, expert)
                specs[field] = TensorSpec(self.expert_key(expert, kind), expected[field])
        return specs

    def attention_weights(
        self, tensors: Mapping[str, np.ndarray], shape: ModelShape
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query, key, value, attn_out) as stored: every weight is an ``nn.Linear`` under its own role,
        so no stand-in for the 3E (+ 3) expert tensors is built (the base class's general route)."""
        query, key, value, attn_out = (tensors[role] for role in _ATTENTION)
        return query, key, value, attn_out

    def mlp_weight(self, field: str, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> np.ndarray:
        """One expert's weight: its role is its field, read as stored."""
        return tensors[field]

    def fused_slices(self, names: Iterable[str], shape: ModelShape) -> dict[str, TensorSlice]:
        """Each routed expert's gate, up and down weights under the stored layout's keys, where a layer
        holds them fused as transformers does in memory and, with ``save_original_format=False``, on
        disk: ``{layer}.mlp.experts.gate_up_proj`` (E, 2 d_ff, N), expert e's gate its rows [0, d_ff)
        and its up projection rows [d_ff, 2 d_ff) (``linear(x, gate_up_proj[e]).chunk(2)``), and
        ``{layer}.mlp.experts.down_proj`` (E, N, d_ff), expert e's down projection ``down_proj[e]``."""
        fused = re.compile(r"^(?P<layer>.*layers\.\d+\.)mlp\.experts\.gate_up_proj$")
        present = set(names)
        e, f, n = shape.num_experts, shape.ffn_size, shape.hidden_size
        slices: dict[str, TensorSlice] = {}
        for name in present:
            match = fused.match(name)
            down = f"{match['layer']}mlp.experts.down_proj" if match else ""
            if match is None or down not in present:
                continue
            layer = match["layer"]
            for expert in range(e):
                gate_up = (e, 2 * f, n)
                slices[layer + self.expert_key(expert, Kind.M_GATE)] = TensorSlice(name, expert, (0, f), gate_up)
                slices[layer + self.expert_key(expert, Kind.M_IN)] = TensorSlice(name, expert, (f, 2 * f), gate_up)
                slices[layer + self.expert_key(expert, Kind.M_OUT)] = TensorSlice(down, expert, None, (e, n, f))
        return slices


class MixtralAdapter(MoeAdapter):
    """Mixtral: ``block_sparse_moe.experts.{e}.w1/w3/w2`` on the Hub, top-2 of 8 experts."""

    model_types: ClassVar[tuple[str, ...]] = ("mixtral",)
    label = "Mixtral"
    experts_key = "block_sparse_moe.experts"
    expert_names = _MIXTRAL_NAMES
    experts_fields = ("num_local_experts", "num_experts")

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        return (Adaptation.SLIDING_WINDOW,) if sliding_window(config, where) else ()


class Qwen3MoeAdapter(MoeAdapter):
    """Qwen3-MoE: RMS norms on each query and key head; experts of width ``moe_intermediate_size``."""

    model_types: ClassVar[tuple[str, ...]] = ("qwen3_moe",)
    label = "Qwen3-MoE"
    expert_size_field = "moe_intermediate_size"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        window = (Adaptation.SLIDING_WINDOW,) if _uses_sliding_window(config, where) else ()
        return (Adaptation.QK_NORM, *window)


class Qwen2MoeAdapter(MoeAdapter):
    """Qwen2-MoE (Qwen1.5-MoE): routed experts plus a shared expert of width
    ``shared_expert_intermediate_size`` behind a sigmoid gate (``mlp.shared_expert_gate``)."""

    model_types: ClassVar[tuple[str, ...]] = ("qwen2_moe",)
    label = "Qwen2-MoE"
    expert_size_field = "moe_intermediate_size"

    def family_adaptations(self, config: Mapping[str, Any], where: str) -> tuple[Adaptation, ...]:
        return (Adaptation.SLIDING_WINDOW,) if _uses_sliding_window(config, where) else ()

    def shared_expert_size(self, config: Mapping[str, Any], where: str) -> int:
        return optional_int(config, "shared_expert_intermediate_size", where)


def _first_present(config: Mapping[str, Any], names: tuple[str, ...]) -> str:
    """The first of ``names`` the config gives (else the first, so that the message names it)."""
    return next((name for name in names if config.get(name) is not None), names[0])


def _uses_sliding_window(config: Mapping[str, Any], where: str) -> bool:
    """Qwen's MoE configs carry a ``sliding_window`` size that only ``use_sliding_window`` turns on."""
    if "use_sliding_window" in config and config["use_sliding_window"] is not True:
        return False
    return sliding_window(config, where)


def _refuse_dense_layers(config: Mapping[str, Any], where: str) -> None:
    """Qwen's MoE configs may make some layers dense (``mlp_only_layers``, ``decoder_sparse_step`` > 1);
    every layer of a profile has the same matrices, so such a model is refused with one line."""
    dense_layers = config.get("mlp_only_layers") or []
    step = config.get("decoder_sparse_step", 1)
    if dense_layers or step != 1:
        raise UnsupportedModelError(
            f"{where} makes some layers dense MLPs among the experts (mlp_only_layers = {dense_layers!r}, "
            f"decoder_sparse_step = {step!r}); specbound reads mixtures of experts whose every layer has experts"
        )
