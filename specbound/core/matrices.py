"""The proxy matrices of one layer, built from its weights in one canonical form for every family.

Orientation, stated once for the whole package: :class:`LayerWeights` holds each weight as
``nn.Linear`` stores it, (out, in), computing ``x @ weight.T``; each family adapter
(:mod:`specbound.io.families`) brings its own layout (GPT-2's Conv1D, GPT-NeoX's interleaved QKV, ...)
to that form. The analysis uses the row-vector convention x -> x W, so every proxy matrix is built
from the transposed weight. With H query heads of size d, H_kv key/value heads, query head h reading
key/value head g(h) = ⌊h / (H / H_kv)⌋, and the head slices s_h = [h d, (h + 1) d):

    QK_h    = W_Q[s_h, :]^T  W_K[s_g(h), :]        (N x N, rank <= d)
    V_h     = W_V[s_g(h), :]^T  (W_O^T)[s_h, :]    (N x N, rank <= d; W_O is the attention output)
    M_gate  = (gate weight)^T                       (N x d_ff, gated MLPs only)
    M_in    = (up / fc1 weight)^T                   (N x d_ff)
    M_out   = (down / fc2 weight)^T                 (d_ff x N)

A decoder layer of an encoder-decoder (SPEC §12) also has a cross-attention, its queries from the
decoder's state and its keys and values from the encoder's output: QK_x and V_x are built from its
four weights (``cross_query`` ... ``cross_out``) exactly as QK and V are from the self-attention's.

A mixture of experts (SPEC §12) has the three MLP matrices once per expert e (and for the shared
expert), each an MLP weight field of its own, ``expert{e}.gate`` ... (:func:`mlp_field`).

QK and V are kept as their two factors (N x d and d x N): their singular values come from the
factors without forming the N x N product (see :mod:`specbound.core.spectrum`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .architecture import Expert, Kind, ModelShape
from .factored import FactoredHeads

__all__ = [
    "BlockMatrix",
    "LayerFactors",
    "LayerSource",
    "LayerWeights",
    "attention_heads",
    "head_rows",
    "layer_factors",
    "mlp_field",
    "mlp_fields",
    "mlp_matrix",
]


class BlockMatrix(Protocol):
    """A feed-forward matrix read block by block, never whole
    (:class:`~specbound.io.checkpoints.checkpoint.MappedMatrix`, or the difference of two,
    :class:`~specbound.io.centred.MappedDifference`)."""

    @property
    def shape(self) -> tuple[int, int]: ...

    def blocks(self, max_bytes: int) -> Iterator[np.ndarray]: ...


class LayerSource(Protocol):
    """One layer's weights, read on demand: :class:`LayerWeights` (in memory),
    :class:`~specbound.io.checkpoints.checkpoint.StreamedLayer` (from the checkpoint, part by part) or
    :class:`~specbound.io.centred.DifferenceLayer` (W - W⁰ of two checkpoints); what
    :func:`specbound.core.engine.analyse_layer` reads."""

    def attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...

    def cross_attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None: ...

    def mlp_weight(self, field: str) -> np.ndarray: ...

    def mlp_mapped(self, field: str) -> BlockMatrix | None: ...


@dataclass(frozen=True, eq=False)
class LayerWeights:
    """One layer's weights in ``nn.Linear`` form, (out, in), float64; ``gate`` only for a gated MLP.

    A mixture of experts has no dense MLP: its MLP weights are ``experts``, by field
    (:func:`mlp_field`: ``expert0.gate``, ``expert0.ffn_in``, ..., ``shared.ffn_out``).
    """

    query: np.ndarray  # (H d, N)
    key: np.ndarray  # (H_kv d, N)
    value: np.ndarray  # (H_kv d, N)
    attn_out: np.ndarray  # (N, H d)
    ffn_in: np.ndarray | None = None  # (d_ff, N)  up / fc1 / intermediate.dense
    ffn_out: np.ndarray | None = None  # (N, d_ff)  down / fc2 / output.dense
    gate: np.ndarray | None = None  # (d_ff, N)  gated MLPs only
    experts: Mapping[str, np.ndarray] = field(default_factory=dict)  # mixtures of experts only
    cross_query: np.ndarray | None = None  # (H d, N)  a decoder layer's cross-attention (encoder-decoders)
    cross_key: np.ndarray | None = None  # (H_kv d, N)  reads the encoder's output
    cross_value: np.ndarray | None = None  # (H_kv d, N)
    cross_out: np.ndarray | None = None  # (N, H d)

    def attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query, key, value, attn_out): what :func:`attention_heads` reads (a streamed layer has the same)."""
        return self.query, self.key, self.value, self.attn_out

    def cross_attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """(query, key, value, attn_out) of the cross-attention, None for a layer without one."""
        cross = (self.cross_query, self.cross_key, self.cross_value, self.cross_out)
        if all(w is None for w in cross):
            return None
        if any(w is None for w in cross):
            raise ValueError("a cross-attention needs its query, key, value and output weights")
        return cross  # type: ignore[return-value]  # none is None, checked above

    def mlp_weight(self, field: str) -> np.ndarray:
        """One MLP weight by field name ("gate", "ffn_in", "ffn_out", or an expert's, :func:`mlp_field`)."""
        value = self.experts.get(field) if "." in field else getattr(self, field, None)
        if value is None:
            raise ValueError(f"this layer has no {field} weight")
        return value

    def mlp_mapped(self, field: str) -> None:
        """Weights in memory are read whole (a streamed layer may map them instead)."""
        return None

    @staticmethod
    def expected_shapes(shape: ModelShape, layer: int | None = None) -> dict[str, tuple[int, int]]:
        """(out, in) shape of each field for a model of ``shape``: the attention's, then every MLP
        field of :func:`mlp_fields` (an expert's ``expert{e}.ffn_in``, ...), then an encoder-decoder's
        cross-attention fields (for every layer, or only if ``layer`` is one of the decoder's)."""
        n, d = shape.hidden_size, shape.head_dim
        shapes = {
            "query": (shape.num_heads * d, n),
            "key": (shape.num_kv_heads * d, n),
            "value": (shape.num_kv_heads * d, n),
            "attn_out": (n, shape.num_heads * d),
        }
        for expert in shape.experts:
            f = shape.expert_ffn_size(expert, layer)
            for kind in shape.layer_kinds:
                shapes[mlp_field(kind, expert)] = (n, f) if kind is Kind.M_OUT else (f, n)
        if shape.encoder_decoder and (layer is None or shape.has_cross(layer)):  # the self-attention's shapes
            for name, cross in CROSS_FIELDS.items():
                shapes[cross] = shapes[name]
        return shapes

    @classmethod
    def of_fields(cls, weights: Mapping[str, np.ndarray]) -> LayerWeights:
        """A layer from its weights by field name (the keys of :meth:`expected_shapes`)."""
        experts = {name: value for name, value in weights.items() if "." in name}
        dense = {name: value for name, value in weights.items() if "." not in name}
        return cls(**dense, experts=experts)


@dataclass(frozen=True, eq=False)
class LayerFactors:
    """Row-vector proxy matrices of one layer; QK and V as batched factor pairs (left @ right)."""

    qk_left: np.ndarray  # (H, N, d)  W_Q[s_h, :]^T per query head
    qk_right: np.ndarray  # (H, d, N)  W_K[s_g(h), :]
    v_left: np.ndarray  # (H, N, d)  W_V[s_g(h), :]^T
    v_right: np.ndarray  # (H, d, N)  (W_O^T)[s_h, :]
    mlp: dict[Kind, np.ndarray]  # M_gate (gated only) (N, d_ff), M_in (N, d_ff), M_out (d_ff, N), profile order

    @property
    def m_in(self) -> np.ndarray:
        return self.mlp[Kind.M_IN]

    @property
    def m_out(self) -> np.ndarray:
        return self.mlp[Kind.M_OUT]

    def qk(self) -> np.ndarray:
        """Dense QK matrices, (H, N, N). For norms and tests, never for singular values."""
        result: np.ndarray = self.qk_left @ self.qk_right
        return result

    def v(self) -> np.ndarray:
        """Dense V matrices, (H, N, N)."""
        result: np.ndarray = self.v_left @ self.v_right
        return result


#: Each self-attention field of :class:`LayerWeights` and its cross-attention counterpart.
CROSS_FIELDS: dict[str, str] = {
    "query": "cross_query",
    "key": "cross_key",
    "value": "cross_value",
    "attn_out": "cross_out",
}


def head_rows(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """Split the output rows of an (H d, N_in) weight into H head slices: (H, d, N_in).

    Row block h is weight[h d:(h + 1) d, :], the slice s_h of the table in the module docstring.
    """
    n_out, n_in = weight.shape
    return weight.reshape(num_heads, n_out // num_heads, n_in)  # (H, d, N_in)


def _per_query_head(kv: np.ndarray, shape: ModelShape) -> np.ndarray:
    """(H_kv, d, N) key or value slices -> (H, d, N), query head h taking slice g(h) (repeat_kv)."""
    if shape.num_kv_heads == shape.num_heads:
        return kv
    return np.repeat(kv, shape.queries_per_kv_head, axis=0)  # (H, d, N)


#: Each MLP kind and the LayerWeights field it is the transpose of.
MLP_WEIGHT_FIELDS: dict[Kind, str] = {Kind.M_GATE: "gate", Kind.M_IN: "ffn_in", Kind.M_OUT: "ffn_out"}


def mlp_field(kind: Kind, expert: Expert = None) -> str:
    """The weight field of one MLP matrix: ``gate``, ``ffn_in``, ``ffn_out`` in a dense layer;
    ``expert{e}.ffn_in`` for routed expert e, ``shared.ffn_in`` for the shared expert."""
    base = MLP_WEIGHT_FIELDS[kind]
    if expert is None:
        return base
    return f"{expert}.{base}" if isinstance(expert, str) else f"expert{expert}.{base}"


def mlp_fields(shape: ModelShape) -> tuple[str, ...]:
    """Every MLP weight field of one layer, in profile order (expert by expert, kind by kind)."""
    return tuple(mlp_field(kind, expert) for expert in shape.experts for kind in shape.layer_kinds)


def attention_heads(
    query: np.ndarray, key: np.ndarray, value: np.ndarray, attn_out: np.ndarray, shape: ModelShape
) -> tuple[FactoredHeads, FactoredHeads]:
    """QK and V of every query head as factor pairs, the key/value factors shared, never repeated.

    The same matrices as :func:`layer_factors` (QK_h = Q_hᵀ K_g(h), V_h = V_g(h)ᵀ O_h), with the
    H_kv key and value factors held once and indexed by g(h): under grouped-query attention their
    QR is then computed once per key/value head, and no (H, d, N) copy is made.
    """
    heads = np.arange(shape.num_heads)
    groups = np.array([shape.kv_head(int(h)) for h in heads], dtype=np.int64)
    q = head_rows(query, shape.num_heads)  # (H, d, N)
    k = head_rows(key, shape.num_kv_heads)  # (H_kv, d, N)
    v = head_rows(value, shape.num_kv_heads)  # (H_kv, d, N)
    # (W_O^T)[s_h, :] = W_O[:, s_h]^T, as a view: (N, H d) -> (N, H, d) -> (H, d, N), no (H, d, N) copy
    o = attn_out.reshape(attn_out.shape[0], shape.num_heads, shape.head_dim).transpose(1, 2, 0)
    qk = FactoredHeads(q.transpose(0, 2, 1), k, heads, groups)  # left (H, N, d), right (H_kv, d, N)
    v_heads = FactoredHeads(v.transpose(0, 2, 1), o, groups, heads)  # left (H_kv, N, d), right (H, d, N)
    return qk, v_heads


def mlp_matrix(kind: Kind, weight: np.ndarray) -> np.ndarray:
    """The row-vector MLP matrix of an (out, in) weight: M_gate, M_in (N, d_ff) or M_out (d_ff, N), a view."""
    return weight.T


def layer_factors(weights: LayerWeights, shape: ModelShape) -> LayerFactors:
    """Build the proxy matrices of a layer from its (out, in) weights (see the module docstring)."""
    q = head_rows(weights.query, shape.num_heads)  # (H, d, N)
    k = _per_query_head(head_rows(weights.key, shape.num_kv_heads), shape)  # (H, d, N)
    v = _per_query_head(head_rows(weights.value, shape.num_kv_heads), shape)  # (H, d, N)
    # (W_O^T)[s_h, :] takes the rows of W_O^T, i.e. the input columns of W_O that read head h.
    o = head_rows(weights.attn_out.T, shape.num_heads)  # (H, d, N)
    if shape.moe:
        raise ValueError("the dense factors of a layer do not apply to a mixture of experts: read mlp_weight")
    mlp = {kind: weights.mlp_weight(MLP_WEIGHT_FIELDS[kind]).T for kind in shape.layer_kinds}  # profile order
    return LayerFactors(
        qk_left=q.transpose(0, 2, 1),  # (H, N, d)
        qk_right=k,
        v_left=v.transpose(0, 2, 1),  # (H, N, d)
        v_right=o,
        mlp=mlp,
    )
