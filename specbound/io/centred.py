"""The bound centred at a reference (SPEC §14): the spectra of W - W⁰, the scales of W.

Covering numbers do not change under translation, so the Schatten terms of the spectrum-adaptive
proxy may be taken of the difference between a weight and a reference W⁰ fixed before the data is
seen (the pretrained base of a fine-tune, or the initialization), while the Lipschitz factors that
carry a perturbation through the network stay those of the actual weights:

    c_ref(W; p) = S_p(W - W⁰)^(1/(p+2)) · s_W^(p/(p+2)) · N^((p+1)/(p+2)),
    ours_centred = Σ_W c_ref(W; p*_W) + √L,     p*_W = argmin over P_m of c_ref(W; p),

and the Edelman-style proxy centred takes ‖W - W⁰‖₂,₁ in ξ. A matrix left unchanged has rank 0 and
contributes nothing, so a model against itself gives ``ours_centred`` = √L exactly.

**Per-head differences stay factored.** With Q_h the query factor of head h (N x d) and K_g its key
factor (d x N),

    QK_h - QK⁰_h = Q_h K_g - Q⁰_h K⁰_g = [Q_h, -Q⁰_h] [K_g; K⁰_g]       (N x 2d times 2d x N)
    V_h  - V⁰_h  = [V_g, -V⁰_g] [O_h; O⁰_h]

so the difference of a layer is itself a layer with head size 2d, whose weights stack each head's
rows of the two checkpoints (:func:`stacked_attention`); its singular values come through the same
QR-core route as any head's (:mod:`specbound.core.spectrum`), rank <= 2d, never an N x N product. The
feed-forward and expert differences are dense, read from both checkpoints one matrix at a time, and
a memory-mapped pair is subtracted block by block (:class:`MappedDifference`), so neither model is
held whole: a fine-tune against its base costs about two analyses' reading and one's memory.

Example:
    >>> import numpy as np
    >>> from specbound.core.architecture import ModelShape
    >>> shape = ModelShape(1, 4, 2, 8)
    >>> rng = np.random.default_rng(0)
    >>> tuned = tuple(rng.normal(size=s) for s in [(4, 4)] * 4)
    >>> q, k, v, o = stacked_attention(tuned, tuned, shape)
    >>> q.shape, o.shape   # two heads of size 2 become two of size 4
    ((8, 4), (4, 8))
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from ..core.architecture import ModelShape
from ..core.directions import DEFAULT_DIRECTIONS, Directions, DirectionSettings, layer_directions
from ..core.errors import CheckpointError, SpecboundWarning
from ..core.progress import ProgressCallback, ProgressEvent, silent

if TYPE_CHECKING:
    from ..core.matrices import BlockMatrix, LayerSource
    from .checkpoints.checkpoint import Checkpoint

__all__ = [
    "DIMENSIONS",
    "DifferenceLayer",
    "MappedDifference",
    "Reference",
    "ReferenceKind",
    "ReferenceMismatchError",
    "check_reference",
    "difference_layers",
    "directions_of",
    "stacked_attention",
]


class ReferenceKind(str, Enum):
    """What the proxy is centred at: a pretrained base, or the run's initialization."""

    BASE = "base"
    INIT = "init"

    @property
    def adaptation(self) -> str:
        """The adaptation's name wherever a centred number is shown (SPEC §14)."""
        return "centred at the base" if self is ReferenceKind.BASE else "centred at initialization"


@dataclass(frozen=True)
class Reference:
    """The reference W⁰ of a centred analysis: the model it was read from, and which kind it is."""

    model: str
    kind: ReferenceKind = ReferenceKind.BASE

    @property
    def adaptation(self) -> str:
        return self.kind.adaptation

    def to_dict(self) -> dict[str, str]:
        """The JSON's ``"reference"`` object: ``{"model": ..., "kind": "base" | "init"}``."""
        return {"model": self.model, "kind": self.kind.value}


class ReferenceMismatchError(CheckpointError):
    """The reference does not have the model's family or dimensions: W - W⁰ has no meaning."""


#: The shape's dimensions compared one by one after the family, the first difference named: the sizes
#: of the proxy matrices and which of them exist. Not the activation, the residual wiring, the routing
#: or the initialisation's σ (``initializer_range``, which only the random twin reads): a base differing
#: in those still has every matrix W⁰ that W - W⁰ needs (SPEC §14: "same family and every dimension").
DIMENSIONS = (
    "num_layers",
    "hidden_size",
    "num_heads",
    "ffn_size",
    "num_kv_heads",
    "head_dim",
    "mlp",
    "num_experts",
    "shared_expert_size",
    "encoder_layers",
    "decoder_ffn_size",
)


def check_reference(shape: ModelShape, reference: ModelShape, model: str, base: str) -> None:
    """Nothing when ``reference`` has ``shape``'s family and every one of its :data:`DIMENSIONS`; else one
    line naming the first difference (:class:`ReferenceMismatchError`). ``model`` and ``base`` name the
    two in the message, which reads whole with a path (``/models/base``) or words (``the baseline``).

    Example:
        >>> from specbound.core.architecture import ModelShape
        >>> check_reference(ModelShape(2, 32, 4, 64), ModelShape(2, 32, 4, 64, initializer_range=0.05), "a", "b")
        >>> check_reference(ModelShape(2, 32, 4, 64), ModelShape(3, 32, 4, 64), "the model", "the base")
        Traceback (most recent call last):
        ...
        specbound.io.centred.ReferenceMismatchError: the base cannot be the reference of the model: num_layers is 3...
    """
    if shape.family != reference.family:
        raise ReferenceMismatchError(
            f"{base} is a {reference.family} model and {model} a {shape.family} one: a centred bound needs "
            "a reference of the same family"
        )
    for name in DIMENSIONS:
        ours, theirs = getattr(shape, name), getattr(reference, name)
        if ours != theirs:
            shown = (theirs.value, ours.value) if isinstance(ours, Enum) else (theirs, ours)
            raise ReferenceMismatchError(
                f"{base} cannot be the reference of {model}: {name} is {shown[0]} there and {shown[1]} here"
            )


def _heads(weight: np.ndarray, heads: int) -> np.ndarray:
    """(H d, N) rows -> (H, d, N), each head's block of rows."""
    return weight.reshape(heads, weight.shape[0] // heads, weight.shape[1])


def stacked_attention(
    tuned: Sequence[np.ndarray | None],
    base: Sequence[np.ndarray | None],
    shape: ModelShape,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (query, key, value, attn_out) weights, in (out, in) form, of a layer with head size 2d whose
    QK_h and V_h are exactly QK_h - QK⁰_h and V_h - V⁰_h (module docstring): query head h's rows
    [W_Q[s_h]; -W⁰_Q[s_h]], key/value head g's [W_K[s_g]; W⁰_K[s_g]] and [W_V[s_g]; -W⁰_V[s_g]], and
    the output's columns [W_O[:, s_h], W⁰_O[:, s_h]].

    Given lists, each weight's entry is let go (set to None) once it is stacked, so that at most the
    two layers' weights and one stacked pair are held at once (a 7B layer's attention in float64 is
    0.3 GiB per model)."""
    tuned = list(tuned) if isinstance(tuned, tuple) else tuned
    base = list(base) if isinstance(base, tuple) else base
    if not (isinstance(tuned, list) and isinstance(base, list)):
        raise TypeError("the weights of a layer are given as a tuple or a list")
    h, h_kv = shape.num_heads, shape.num_kv_heads

    def stack(i: int, heads: int, sign: float) -> np.ndarray:
        a, b = tuned[i], base[i]
        assert a is not None and b is not None
        width = a.shape[1]
        stacked = np.concatenate([_heads(a, heads), sign * _heads(b, heads)], axis=1)  # (heads, 2d, width)
        tuned[i] = base[i] = None
        return stacked.reshape(heads, -1, width)

    queries, keys, values = stack(0, h, -1.0), stack(1, h_kv, 1.0), stack(2, h_kv, -1.0)
    o, o0 = tuned[3], base[3]
    assert o is not None and o0 is not None
    n = o.shape[0]
    outputs = np.concatenate([o.reshape(n, h, -1), o0.reshape(n, h, -1)], axis=2)  # (N, H, 2d)
    tuned[3] = base[3] = None
    del o, o0
    d = queries.shape[1] // 2
    # A head whose factors are bit for bit the base's has a difference of exactly zero; its stacked
    # factors would leave rounding of about 1e-17 in the QR core, so its query (QK) or output (V)
    # rows are zeroed: an unchanged matrix has singular values and norms of exactly 0. (The halves of
    # a stacked head are the two checkpoints' rows, one of them negated: negating again is exact.)
    for head in range(h):
        group = shape.kv_head(head)
        if _halves_equal(queries[head], -1.0) and _halves_equal(keys[group], 1.0):
            queries[head] = 0.0
        if _halves_equal(values[group], -1.0) and np.array_equal(outputs[:, head, :d], outputs[:, head, d:]):
            outputs[:, head] = 0.0
    width = queries.shape[2]
    return queries.reshape(-1, width), keys.reshape(-1, width), values.reshape(-1, width), outputs.reshape(n, -1)


def _halves_equal(stacked: np.ndarray, sign: float) -> bool:
    """Whether a stacked head's two halves hold the same weights (the second stored times ``sign``)."""
    d = stacked.shape[0] // 2
    return bool(np.array_equal(stacked[:d], sign * stacked[d:]))


@dataclass(frozen=True, eq=False)
class MappedDifference:
    """M - M⁰ of two memory-mapped feed-forward matrices of one shape, block by block: each block of
    the difference is the difference of the two blocks, so neither matrix is held whole."""

    tuned: BlockMatrix
    base: BlockMatrix

    @property
    def shape(self) -> tuple[int, int]:
        return self.tuned.shape

    def blocks(self, max_bytes: int) -> Iterator[np.ndarray]:
        for a, b in zip(self.tuned.blocks(max_bytes), self.base.blocks(max_bytes), strict=True):
            yield a - b


class DifferenceLayer:
    """One layer of W - W⁰, read on demand from a layer of each checkpoint: a layer with head size 2d
    (:func:`stacked_attention`) and the dense MLP differences. It reads like
    :class:`~specbound.core.matrices.LayerWeights` (the :class:`~specbound.io.loading.LayerSource` protocol)."""

    def __init__(self, tuned: LayerSource, base: LayerSource, shape: ModelShape) -> None:
        self.tuned, self.base, self.shape = tuned, base, shape

    #: A difference is never cached layer by layer (it belongs to a pair of checkpoints).
    revision = None

    def attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        # lists, so that each weight is let go once stacked (stacked_attention)
        return stacked_attention(list(self.tuned.attention_weights()), list(self.base.attention_weights()), self.shape)

    def cross_attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        tuned, base = self.tuned.cross_attention_weights(), self.base.cross_attention_weights()
        if tuned is None or base is None:
            return None
        return stacked_attention(list(tuned), list(base), self.shape)

    def mlp_weight(self, field: str) -> np.ndarray:
        result: np.ndarray = self.tuned.mlp_weight(field) - self.base.mlp_weight(field)
        return result

    def mlp_mapped(self, field: str) -> MappedDifference | None:
        tuned = self.tuned.mlp_mapped(field)
        base = self.base.mlp_mapped(field) if tuned is not None else None
        return None if tuned is None or base is None else MappedDifference(tuned, base)


def difference_shape(shape: ModelShape) -> ModelShape:
    """The shape the difference layers are analysed under: every head twice as wide (2d)."""
    return dataclasses.replace(shape, head_dim=2 * shape.head_dim)


def difference_layers(tuned: Checkpoint, base: Checkpoint) -> Iterator[DifferenceLayer]:
    """Each layer of W - W⁰, streamed from both checkpoints side by side."""
    for layer, reference in zip(tuned.stream(), base.stream(), strict=True):
        yield DifferenceLayer(layer, reference, tuned.shape)


#: Unit roundoff of each floating-point storage type: the relative size of rounding a weight to it.
UNIT_ROUNDOFF: dict[str, float] = {"F64": 2.0**-53, "F32": 2.0**-24, "F16": 2.0**-11, "BF16": 2.0**-8}


def warn_if_dtypes_differ(tuned: Checkpoint, base: Checkpoint) -> None:
    """One warning when the model is stored in a coarser floating-point type than its reference (a
    float32 base fine-tuned and saved in bfloat16): every weight, changed or not, was rounded on the
    way, by up to the coarser type's unit roundoff relative to it. A finer type (a float32 fine-tune of
    a bfloat16 base) holds the reference's values exactly and is not warned about."""
    ours, theirs = tuned.storage_dtype(), base.storage_dtype()
    if ours is None or theirs is None or ours == theirs:
        return
    roundoff = UNIT_ROUNDOFF.get(ours, 0.0)
    if roundoff <= UNIT_ROUNDOFF.get(theirs, 0.0):
        return
    warnings.warn(
        f"{tuned.where} is stored in {ours} and its reference {base.where} in {theirs}: every weight "
        f"differs by rounding, up to {roundoff:.2g} of its size, so no matrix of the difference is exactly unchanged",
        SpecboundWarning,
        stacklevel=2,
    )


def directions_of(
    tuned: Checkpoint,
    base: Checkpoint,
    settings: DirectionSettings = DEFAULT_DIRECTIONS,
    *,
    progress: ProgressCallback = silent,
) -> Directions:
    """Where each proxy matrix of ``tuned`` moved from ``base``'s (SPEC §14b,
    :mod:`specbound.core.directions`): intruder dimensions, the smallest best-match cosine, the top-k
    subspace overlaps and the near-tie flag, in profile order. Both checkpoints are streamed layer by
    layer side by side; the heads come from their factors, each feed-forward matrix by a dense SVD in
    the layout its module stores it (GPT-2's ``Conv1D``: (in, out)). The reference must match
    (:func:`check_reference`).
    """
    check_reference(tuned.shape, base.shape, tuned.where, base.where)
    shape, found = tuned.shape, []
    in_out = tuned.adapter.conv1d_layers
    for index, (layer, reference) in enumerate(zip(tuned.stream(), base.stream(), strict=True)):
        found.extend(layer_directions(layer, reference, shape, settings, module_in_out=in_out))
        progress(ProgressEvent("analyse", index + 1, shape.num_layers, f"singular vectors, layer {index + 1}"))
    return Directions.of(found, settings)
