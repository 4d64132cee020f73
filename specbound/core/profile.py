"""The spectral profile of a model: every singular value and norm the bound needs, and no weights.

A :class:`SpectralProfile` is what the slow part of the analysis produces and what the disk cache
stores; all bound terms are computed from it (see :mod:`specbound.core.bounds`) without touching the
checkpoint again.

Profile order, the one layout of every per-matrix array in specbound: layer by layer, bottom first;
within a layer QK heads 0..H-1, V heads 0..H-1 (one per query head), then M_gate (gated MLPs only),
M_in and M_out (:attr:`ModelShape.kinds <specbound.core.architecture.ModelShape.kinds>`); in a mixture of
experts the MLP kinds come once per expert, expert 0's M_gate, M_in, M_out, then expert 1's, ..., the
shared expert's last (:attr:`ModelShape.experts <specbound.core.architecture.ModelShape.experts>`).
Nothing outside this module spells that order out: code that needs a kind's values as a (layer,
head) grid, per layer or per expert uses :meth:`SpectralProfile.per_head`,
:meth:`SpectralProfile.per_layer`, :meth:`SpectralProfile.per_expert` and their inverse
:meth:`SpectralProfile.assemble`, and finds one matrix with :meth:`SpectralProfile.index`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .architecture import HEAD_KINDS, SHARED_EXPERT, Expert, Kind, ModelShape
from .defaults import RANK_TOL
from .limits import LIMITS
from .spectrum import rank_threshold
from .values import is_genuine_int

if TYPE_CHECKING:
    import pandas as pd

_SHAPE_FIELDS = (
    "num_layers",
    "hidden_size",
    "num_heads",
    "ffn_size",
    "num_kv_heads",
    "head_dim",
    "num_experts",
    "experts_per_token",
    "shared_expert_size",
    "encoder_layers",
    "decoder_ffn_size",
)
__all__ = ["HEAD_KINDS", "MatrixId", "SpectralProfile", "full_dims_of", "matrix_ids", "validate_profile"]


@dataclass(frozen=True, order=True)
class MatrixId:
    """Which proxy matrix: its layer (0-based, bottom first), kind, query head (None for the MLP kinds)
    and, in a mixture of experts, the expert of an MLP kind (0..E-1 or ``"shared"``; None otherwise).

    In an encoder-decoder ``layer`` counts through both stacks, the encoder's first (the order the
    bound reads them in); ``stack`` and ``stack_layer`` (the index within the stack, as the checkpoint
    numbers it) are set on the ids of :func:`matrix_ids` for the labels and do not take part in
    comparisons: ``MatrixId(7, Kind.QK_X, 0)`` is that matrix whether they are given or not.

    Examples:
        >>> profile = specbound.load_profile("minilm-l6")
        >>> profile.ids[0], profile.ids[-1]
        (MatrixId(layer=0, kind=<Kind.QK: 'QK'>, head=0, ...), MatrixId(layer=5, kind=<Kind.M_OUT: 'M_out'>, ...))
        >>> row = profile.index(MatrixId(0, Kind.V, 3))  # layer 0, the value-output matrix of head 3
        >>> int(profile.rank[row])  # at most the head size d = 32
        32
    """

    layer: int
    kind: Kind
    head: int | None = None
    expert: Expert = None
    stack: str | None = field(default=None, compare=False)
    stack_layer: int | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """'L3 QK h2', 'L0 M_in e3' (an expert), 'dec L1 QK_x h0' (a stack's layer)."""
        head = f" h{self.head}" if self.head is not None else ""
        where = f"L{self.layer}" if self.stack is None else f"{self.stack[:3]} L{self.stack_layer}"
        return f"{where} {self.kind.value}{head}{expert_suffix(self.expert)}"


def expert_suffix(expert: Expert) -> str:
    """' e3' for routed expert 3, ' shared' for the shared expert, '' for a dense MLP or a head."""
    if expert is None:
        return ""
    return f" {expert}" if isinstance(expert, str) else f" e{expert}"


def expert_code(expert: Expert, shape: ModelShape) -> int:
    """An expert as an integer for arrays: -1 for none, e for routed expert e, E for the shared one."""
    if expert is None:
        return -1
    return shape.num_experts if expert == SHARED_EXPERT else int(expert)


def full_dims_of(shape: ModelShape) -> np.ndarray:
    """min(rows, cols) of every matrix as a full matrix: N for the per-head kinds, min(N, d_ff) for the
    MLP kinds (the expert's own d_ff in a mixture of experts, a decoder's own in an encoder-decoder)."""

    def mlp(layer: int) -> list[int]:
        return [
            min(shape.hidden_size, shape.expert_ffn_size(expert, layer))
            for expert in shape.experts
            for _ in shape.layer_kinds
        ]

    dims = [
        [shape.hidden_size] * (len(shape.head_kinds_of(layer)) * shape.num_heads) + mlp(layer)
        for layer in range(shape.num_layers)
    ]
    return np.array([k for layer in dims for k in layer], dtype=np.int64)  # (M,)


def validate_profile(profile: SpectralProfile, *, full_width: bool = False) -> None:
    """The one check every profile passes, whatever its origin (computed, the cache, an atlas).

    ValueError unless: the shape's fields are genuine positive integers within the limits; the
    arrays have the shapes the model implies (M = L (2H + 2) rows, L (2H + 3) with a gated MLP, at most
    N columns, exactly N with ``full_width``, as every computed profile has); singular values are finite, non-negative,
    non-increasing along each row and zero beyond the matrix's own min(rows, cols); ``full_dims`` are
    integers equal to that min(rows, cols); the norms are finite and non-negative.
    """
    shape = profile.shape
    if not isinstance(shape, ModelShape) or not all(is_genuine_int(getattr(shape, f)) for f in _SHAPE_FIELDS):
        raise ValueError("the shape must hold integer sizes")
    if not (isinstance(profile.model, str) and isinstance(profile.revision, str)):
        raise ValueError("the model name and revision must be strings")
    m, n = shape.num_matrices, shape.hidden_size
    if m * n > LIMITS.max_profile_values:
        raise ValueError(
            f"a profile of {m} matrices of width {n} is above the limit of {LIMITS.max_profile_values} values"
        )
    sv = profile.singular_values
    if not isinstance(sv, np.ndarray) or sv.ndim != 2 or sv.shape[0] != m:
        raise ValueError(f"expected singular values for {m} matrices, got {getattr(sv, 'shape', None)}")
    width = sv.shape[1]
    if width > n or width < 1 or (full_width and width != n):
        raise ValueError(
            f"the singular-value rows have {width} columns; the model implies "
            f"{'exactly' if full_width else 'at most'} {n}"
        )
    for name in ("full_dims", "norm_21", "norm_11"):
        array = getattr(profile, name)
        if not isinstance(array, np.ndarray) or array.shape != (m,):
            raise ValueError(f"{name} must have shape ({m},)")
    if sv.dtype.kind != "f" or profile.norm_21.dtype.kind != "f" or profile.norm_11.dtype.kind != "f":
        raise ValueError("singular values and norms must be floating-point numbers")
    if profile.full_dims.dtype.kind not in "iu":
        raise ValueError("full_dims must be integers")
    if not np.array_equal(profile.full_dims, full_dims_of(shape)):
        raise ValueError("full_dims do not match the matrices' sizes (N for QK and V, min(N, d_ff) for the MLP kinds)")
    if not np.isfinite(sv).all() or (sv < 0).any():
        raise ValueError("singular values must be finite and non-negative")
    if (np.diff(sv, axis=1) > 0).any():
        raise ValueError("singular values must be listed in non-increasing order")
    beyond = np.arange(width)[None, :] >= profile.full_dims[:, None]  # (M, K)
    if (sv[beyond] != 0).any():
        raise ValueError("a matrix has more nonzero singular values than min(rows, cols)")
    if not np.isfinite(profile.norm_21).all() or (profile.norm_21 < 0).any():
        raise ValueError("norm_21 must be finite and non-negative")
    computed = profile.norm_11[~np.isnan(profile.norm_11)]  # NaN: not computed (defaults.LARGE_NORM_11)
    if not np.isfinite(computed).all() or (computed < 0).any():
        raise ValueError("norm_11 must be finite and non-negative where computed")


def matrix_position(shape: ModelShape, layer: int, kind: Kind, head: int | None = None, expert: Expert = None) -> int:
    """Row of one matrix in profile order: the layer's first row (:attr:`ModelShape.layer_starts`) +
    [j H + h for the j-th per-head kind of the layer | J H + u k + position among the MLP kinds], with
    J the layer's per-head kinds (2, or 4 in a decoder layer of an encoder-decoder) and u the expert's
    position in :attr:`ModelShape.experts` (0 in a dense layer)."""
    heads = shape.num_heads
    if not is_genuine_int(layer) or not 0 <= layer < shape.num_layers:
        raise IndexError(f"layer {layer} is outside 0..{shape.num_layers - 1}")
    head_kinds = shape.head_kinds_of(layer)
    if kind in HEAD_KINDS:
        if kind not in head_kinds:
            where = f"layer {layer} ({shape.stack_of(layer)})" if shape.encoder_decoder else "this model"
            raise IndexError(f"{where} has no {kind.value} matrices")
        if head is None or not 0 <= head < heads:
            raise IndexError(f"{kind.value} needs a head in 0..{heads - 1}, got {head}")
        offset = head_kinds.index(kind) * heads + head
    else:
        if kind not in shape.layer_kinds:
            raise IndexError(f"this model has no {kind.value} matrices")
        if head is not None:
            raise IndexError(f"{kind.value} has one matrix per layer, not per head")
        mlp = _expert_position(shape, expert) * len(shape.layer_kinds) + shape.layer_kinds.index(kind)
        offset = len(head_kinds) * heads + mlp
    return shape.layer_starts[layer] + offset


def _expert_position(shape: ModelShape, expert: Expert) -> int:
    """Position of an expert among :attr:`ModelShape.experts`; IndexError for one the model lacks."""
    if expert is None and shape.moe:
        raise IndexError(f"a mixture of experts has one MLP per expert: name one of 0..{shape.num_experts - 1}")
    valid = not isinstance(expert, bool) and (expert is None or isinstance(expert, int | str))
    if not valid or expert not in shape.experts:
        raise IndexError(f"this model has no expert {expert!r}" if expert is not None else "")
    return shape.experts.index(expert)


def matrix_ids(shape: ModelShape) -> tuple[MatrixId, ...]:
    """The L (2H + 2), L (2H + 3) or L (2H + 3E [+ 3]) matrices of a model (L_enc (2H + k) + L_dec
    (4H + k) for an encoder-decoder, each id with its stack), in profile order."""
    ids: list[MatrixId] = []
    for layer in range(shape.num_layers):
        stack = shape.stack_of(layer)
        number = shape.stack_layer(layer) if stack else None
        for kind in shape.head_kinds_of(layer):
            ids.extend(MatrixId(layer, kind, h, stack=stack, stack_layer=number) for h in range(shape.num_heads))
        ids.extend(
            MatrixId(layer, kind, expert=expert, stack=stack, stack_layer=number)
            for expert in shape.experts
            for kind in shape.layer_kinds
        )
    return tuple(ids)


def expert_column(experts: list[Expert]) -> Any:
    """A table column of experts as text ("0", ..., "shared", missing for a head): one type for
    Arrow, CSV and the dashboard's tables (pandas is imported by the caller's table edge)."""
    import pandas as pd

    return pd.array([None if e is None else str(e) for e in experts], dtype="string")


def _expert_grid(values: np.ndarray | float, layers: int, experts: int) -> np.ndarray:
    """An MLP kind's values as (L, U): an (L,) array is one value per layer for every expert."""
    array = np.asarray(values)  # its own dtype: ranks stay integers
    if array.ndim == 1:
        array = array[:, None]
    return np.broadcast_to(array, (layers, experts))


@dataclass(frozen=True, eq=False)
class SpectralProfile:
    """Singular values (descending, zero-padded to a common length) and the two entrywise norms.

    ``full_dims[i]`` is k = min(rows, cols) of matrix i as a full matrix (N for QK and V even though
    only d singular values can be nonzero); it enters the numerical-rank threshold.

    Examples:
        >>> profile = specbound.load_profile("minilm-l6")
        >>> profile.singular_values.shape  # 156 = L (2H + 2) matrices, padded to the longest spectrum
        (156, 384)
        >>> qk = MatrixId(0, Kind.QK, 0)
        >>> sigma = profile.singular_values_of(qk)
        >>> bool(sigma[0] == profile.spectral_norm[profile.index(qk)]), round(float(sigma[0]), 3)  # σ₁ = ‖W‖₂
        (True, 4.917)
        >>> frame = profile.to_frame()  # one row per matrix: layer, head, kind, rank and every norm
        >>> frame.shape, frame.columns[:4].tolist()
        ((156, 10), ['layer', 'head', 'kind', 'rank'])
    """

    model: str
    revision: str
    shape: ModelShape
    singular_values: np.ndarray  # (M, K) float64, M = L (2H + 2), or L (2H + 3) with a gated MLP
    full_dims: np.ndarray  # (M,) int
    norm_21: np.ndarray  # (M,) sum of column 2-norms
    norm_11: np.ndarray  # (M,) sum of absolute entries; NaN where not computed (defaults.LARGE_NORM_11)

    def __post_init__(self) -> None:
        validate_profile(self)

    # --- which matrix is where ---------------------------------------------------------------
    @cached_property
    def ids(self) -> tuple[MatrixId, ...]:
        return matrix_ids(self.shape)

    @property
    def model_kinds(self) -> tuple[Kind, ...]:
        """The kinds this model has, in profile order (M_gate only with a gated MLP)."""
        return self.shape.kinds

    @cached_property
    def layers(self) -> np.ndarray:
        return np.array([i.layer for i in self.ids])

    @cached_property
    def heads(self) -> np.ndarray:
        """Query-head index per matrix, -1 for the layer-level MLP kinds."""
        return np.array([-1 if i.head is None else i.head for i in self.ids])

    @cached_property
    def kinds(self) -> np.ndarray:
        """Kind per matrix as its string value ("QK", "V", "M_gate", "M_in", "M_out")."""
        return np.array([i.kind.value for i in self.ids])

    @cached_property
    def experts(self) -> np.ndarray:
        """Expert per matrix as an integer (:func:`expert_code`): -1 for the heads and a dense MLP,
        e for routed expert e, E for the shared expert."""
        return np.array([expert_code(i.expert, self.shape) for i in self.ids], dtype=np.int64)

    def mask(self, kind: Kind) -> np.ndarray:
        """(M,) True for the matrices of one kind."""
        result: np.ndarray = self.kinds == Kind(kind).value
        return result

    def index(self, matrix: MatrixId) -> int:
        """Row of a matrix in profile order."""
        return matrix_position(self.shape, matrix.layer, matrix.kind, matrix.head, matrix.expert)

    @cached_property
    def stacks(self) -> np.ndarray:
        """Stack per matrix ("encoder", "decoder"; "" for a model of one stack)."""
        return np.array([i.stack or "" for i in self.ids])

    @cached_property
    def stack_layers(self) -> np.ndarray:
        """Layer per matrix within its stack (the layer itself for a model of one stack)."""
        return np.array([i.layer if i.stack_layer is None else i.stack_layer for i in self.ids])

    def head_rows(self, kind: Kind) -> np.ndarray:
        """Rows (profile order) of a per-head kind as a grid, (L_k, H): one row per layer that has the
        kind (:meth:`ModelShape.layers_with <specbound.core.architecture.ModelShape.layers_with>`)."""
        kind = Kind(kind)
        if not kind.per_head:
            raise ValueError(f"{kind.value} has one matrix per layer: use per_layer")
        layers = self.shape.layers_with(kind)
        if not layers:
            raise ValueError(f"this model has no {kind.value} matrices")
        first = np.array([matrix_position(self.shape, layer, kind, 0) for layer in layers])
        return first[:, None] + np.arange(self.shape.num_heads)[None, :]

    def per_head(self, values: np.ndarray, kind: Kind) -> np.ndarray:
        """The (M,) per-matrix ``values`` of a per-head kind as a layer x head grid, (L, H); for QK_x and
        V_x of an encoder-decoder the decoder's layers only, (L_dec, H)."""
        result: np.ndarray = np.asarray(values)[self.head_rows(kind)]
        return result

    def per_layer(self, values: np.ndarray, kind: Kind, expert: Expert = None) -> np.ndarray:
        """The (M,) per-matrix ``values`` of a per-layer kind (M_gate, M_in or M_out), one per layer, (L,);
        in a mixture of experts, those of one ``expert`` (0..E-1 or ``"shared"``)."""
        kind = Kind(kind)
        if kind in HEAD_KINDS:
            raise ValueError(f"{kind.value} has one matrix per head: use per_head")
        if kind not in self.shape.layer_kinds:
            raise ValueError(f"this model has no {kind.value} matrices")
        try:
            rows = [matrix_position(self.shape, layer, kind, expert=expert) for layer in range(self.shape.num_layers)]
        except IndexError as exc:
            raise ValueError(str(exc)) from None
        return np.asarray(values)[rows]  # (L,)

    def per_expert(self, values: np.ndarray, kind: Kind) -> np.ndarray:
        """The (M,) per-matrix ``values`` of an MLP kind as a layer x expert grid, (L, U), the experts in
        :attr:`ModelShape.experts` order ((L, 1) for a dense MLP)."""
        return np.stack([self.per_layer(values, kind, expert) for expert in self.shape.experts], axis=1)

    def by_kind(self, values: np.ndarray) -> dict[Kind, np.ndarray]:
        """Per-matrix ``values`` split by kind: (L, H) for QK and V, (L_dec, H) for QK_x and V_x; (L,) for
        each MLP kind of this model, (L, U) with one column per expert in a mixture of experts."""
        return {
            kind: self.per_head(values, kind)
            if kind.per_head
            else (self.per_expert(values, kind) if self.shape.moe else self.per_layer(values, kind))
            for kind in self.model_kinds
        }

    def assemble(self, parts: Mapping[Kind, np.ndarray | float]) -> np.ndarray:
        """The inverse of :meth:`by_kind`: (L_k, H) per head kind (or anything that broadcasts to it) and
        (L,) per MLP kind ((L, U), or (L,) shared by every expert, in a mixture of experts), for every
        kind of this model -> (M,) in profile order."""
        L, U = self.shape.num_layers, len(self.shape.experts)
        if set(parts) != set(self.model_kinds):
            raise ValueError(f"expected values for {', '.join(k.value for k in self.model_kinds)}")
        out = np.empty(self.shape.num_matrices, dtype=np.result_type(*(np.asarray(v) for v in parts.values())))
        for kind in self.shape.head_kinds:
            rows = self.head_rows(kind)
            out[rows] = np.broadcast_to(parts[kind], rows.shape)
        for kind in self.shape.layer_kinds:
            grid = _expert_grid(parts[kind], L, U)  # (L, U)
            for u, expert in enumerate(self.shape.experts):
                out[[matrix_position(self.shape, layer, kind, expert=expert) for layer in range(L)]] = grid[:, u]
        return out

    def rows_of(
        self,
        layers: Iterable[int] | None = None,
        kinds: Iterable[Kind | str] | None = None,
        heads: Iterable[int] | None = None,
        experts: Iterable[Expert] | None = None,
    ) -> np.ndarray:
        """Rows (profile order) of the matrices in the given layers, kinds, heads and experts; None selects all.

        ``heads`` filters the per-head kinds only, ``experts`` the MLP kinds of a mixture of experts
        only; the other kinds are kept when their kind is chosen.
        """
        keep = np.ones(self.shape.num_matrices, dtype=bool)
        if layers is not None:
            keep &= np.isin(self.layers, list(layers))
        if kinds is not None:
            keep &= np.isin(self.kinds, [Kind(k).value for k in kinds])
        if heads is not None:
            keep &= (self.heads < 0) | np.isin(self.heads, list(heads))
        if experts is not None:
            codes = [expert_code(expert, self.shape) for expert in experts]
            keep &= (self.experts < 0) | np.isin(self.experts, codes)
        return np.flatnonzero(keep)

    # --- derived quantities -----------------------------------------------------------------
    @cached_property
    def spectral_norm(self) -> np.ndarray:
        return self.singular_values[:, 0]

    @cached_property
    def frobenius_norm(self) -> np.ndarray:
        result: np.ndarray = np.sqrt(np.square(self.singular_values).sum(axis=1))
        return result

    @cached_property
    def nuclear_norm(self) -> np.ndarray:
        result: np.ndarray = self.singular_values.sum(axis=1)
        return result

    @cached_property
    def stable_rank(self) -> np.ndarray:
        """||W||_F^2 / sigma_1^2 (0 for a zero matrix)."""
        sq = np.square(self.frobenius_norm)
        top = np.square(self.spectral_norm)
        result: np.ndarray = np.divide(sq, top, out=np.zeros_like(sq), where=top > 0)
        return result

    @cached_property
    def rank_thresholds(self) -> np.ndarray:
        return rank_threshold(self.spectral_norm, self.full_dims, RANK_TOL)

    @cached_property
    def above_threshold(self) -> np.ndarray:
        """(M, K) mask of the singular values that count: sigma_i > tau k max(sigma_1, 1)."""
        return self.singular_values > self.rank_thresholds[:, None]

    @cached_property
    def rank(self) -> np.ndarray:
        result: np.ndarray = self.above_threshold.sum(axis=1)
        return result

    def singular_values_of(self, matrix: MatrixId | int) -> np.ndarray:
        """The min(rows, cols) singular values of one matrix, descending, zeros included."""
        i = matrix if isinstance(matrix, int) else self.index(matrix)
        k = int(self.full_dims[i])
        sv = self.singular_values[i, :k]
        return np.pad(sv, (0, k - sv.size))

    def to_frame(self) -> pd.DataFrame:
        """One row per matrix with its norms and ranks (the table edge; pandas is imported here)."""
        import pandas as pd

        experts = {"expert": expert_column([i.expert for i in self.ids])} if self.shape.moe else {}
        stacks = {"stack": self.stacks, "stack_layer": self.stack_layers} if self.shape.encoder_decoder else {}
        return pd.DataFrame(
            {
                "layer": self.layers,
                **stacks,
                "head": pd.array([i.head for i in self.ids], dtype="Int64"),
                **experts,
                "kind": self.kinds,
                "rank": self.rank,
                "spectral_norm": self.spectral_norm,
                "frobenius_norm": self.frobenius_norm,
                "nuclear_norm": self.nuclear_norm,
                "norm_21": self.norm_21,
                "norm_11": self.norm_11,
                "stable_rank": self.stable_rank,
            }
        )
