"""BLOOM (``bloom``) and Falcon (``falcon``): causal decoders with a fused ``query_key_value`` weight
and (BLOOM always, Falcon when ``alibi``) ALiBi, a bias added to the attention logits that depends on
the distance between tokens only, not on the input: the QK matrix is unchanged.

BLOOM's ``self_attention.query_key_value.weight`` (3N, N) is interleaved per head like GPT-NeoX's
(``view(..., num_heads, 3, head_dim)``). Falcon's has three layouts (``FalconAttention._split_heads``):

* ``new_decoder_architecture`` (Falcon-40B/180B): ((H + 2 H_kv) d, N), rows viewed as
  (H_kv, H / H_kv + 2, d): for each key/value group, its H / H_kv query heads, then its key, then its
  value; query head h of group ⌊h / (H / H_kv)⌋ is row block [g, h mod (H / H_kv)];
* ``multi_query`` (Falcon-7B): ((H + 2) d, N): H query heads, then one key head, then one value head;
* otherwise (Falcon-RW): (3 H d, N), interleaved per head as BLOOM's.

Falcon's MLP is ``dense_h_to_4h`` / ``dense_4h_to_h`` (``ffn_hidden_size``, 4N when null), its residual
parallel with ``parallel_attn`` or the new architecture; BLOOM's is sequential, with a tanh GELU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.architecture import Adaptation, ModelShape, Residual
from .base import TensorSpec
from .config import activation, build_shape, flag, initializer_range, optional_int, positive_int
from .neox import FusedPerHeadAdapter, per_head_qkv


def _int_field(config: Mapping[str, Any], where: str, *names: str, default: int | None = None) -> int:
    """A positive integer under its current name or an older one (``n_head``, ``n_layer``, ...)."""
    for name in names[:-1]:
        if config.get(name) is not None:
            return positive_int(config, name, where)
    return positive_int(config, names[-1], where, default=default)


class BloomAdapter(FusedPerHeadAdapter):
    model_types = ("bloom",)
    label = "BLOOM"
    root = "h"
    prefixes = ("", "transformer.")
    attention = "self_attention"

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        hidden = _int_field(config, where, "n_embed", "hidden_size")
        return build_shape(
            where,
            num_layers=_int_field(config, where, "num_hidden_layers", "n_layer"),
            hidden_size=hidden,
            num_heads=_int_field(config, where, "num_attention_heads", "n_head"),
            ffn_size=4 * hidden,
            family="bloom",
            activation="gelu_new",  # BloomGelu: the tanh approximation, fixed by the architecture
            adaptations=(Adaptation.CAUSAL, Adaptation.ALIBI),
            initializer_range=initializer_range(config),
        )


class FalconAdapter(BloomAdapter):
    model_types = ("falcon",)
    label = "Falcon"

    @staticmethod
    def _layout(config: Mapping[str, Any], where: str) -> str:
        if flag(config, "new_decoder_architecture", where, False):
            return "grouped"
        return "multi-query" if flag(config, "multi_query", where, True) else "per-head"

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        heads = _int_field(config, where, "num_attention_heads", "n_head")
        layout = self._layout(config, where)
        if layout == "grouped":
            kv_heads = _int_field(config, where, "num_kv_heads", "n_head_kv", default=heads)
        else:
            kv_heads = 1 if layout == "multi-query" else heads
        hidden = positive_int(config, "hidden_size", where)
        parallel = layout == "grouped" or flag(config, "parallel_attn", where, True)
        alibi = flag(config, "alibi", where, False)
        adaptations = [Adaptation.CAUSAL, Adaptation.ALIBI if alibi else Adaptation.ROTARY]
        if kv_heads < heads:
            adaptations.append(Adaptation.GROUPED_QUERY)
        if parallel:
            adaptations.append(Adaptation.PARALLEL_RESIDUAL)
        return build_shape(
            where,
            num_layers=_int_field(config, where, "num_hidden_layers", "n_layer"),
            hidden_size=hidden,
            num_heads=heads,
            ffn_size=optional_int(config, "ffn_hidden_size", where) or 4 * hidden,
            num_kv_heads=kv_heads,
            residual=Residual.PARALLEL if parallel else Residual.SEQUENTIAL,
            family="falcon",
            activation=activation(config, "activation", where, "gelu"),
            adaptations=tuple(adaptations),
            initializer_range=initializer_range(config),
        )

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        n, d = shape.hidden_size, shape.head_dim
        rows = (shape.num_heads + 2 * shape.num_kv_heads) * d  # 3N per head, (H + 2) d multi-query
        return {**super().tensors(shape), "qkv": TensorSpec("self_attention.query_key_value.weight", (rows, n))}

    def split_qkv(self, fused: np.ndarray, shape: ModelShape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The three layouts are one: the grouped view (H_kv, H / H_kv + 2, d, N) with H_kv = H is the
        per-head (H, 3, d, N), and with H_kv = 1 it is multi-query's Q (H d) | K (d) | V (d)."""
        h, kv, d, n = shape.num_heads, shape.num_kv_heads, shape.head_dim, shape.hidden_size
        if kv == h:
            return per_head_qkv(fused, shape)
        group = shape.queries_per_kv_head
        qkv = fused.reshape(kv, group + 2, d, n)  # (H_kv, H / H_kv + 2, d, N)
        query = qkv[:, :group].reshape(h * d, n)  # [g, j] is query head g (H / H_kv) + j
        return query, qkv[:, group].reshape(kv * d, n), qkv[:, group + 1].reshape(kv * d, n)
