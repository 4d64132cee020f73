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
QR-core route as any head's (:mod:`specbound.spectrum`), rank <= 2d, never an N x N product. The
feed-forward and expert differences are dense, read from both checkpoints one matrix at a time, and
a memory-mapped pair is subtracted block by block (:class:`MappedDifference`), so neither model is
held whole: a fine-tune against its base costs about two analyses' reading and one's memory.

Example:
    >>> import numpy as np
    >>> from specbound.architecture import ModelShape
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
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from .architecture import ModelShape
from .errors import CheckpointError, SpecboundWarning

if TYPE_CHECKING:
    from .checkpoints.checkpoint import Checkpoint
    from .matrices import BlockMatrix, LayerSource

__all__ = [
    "DifferenceLayer",
    "MappedDifference",
    "Reference",
    "ReferenceKind",
    "ReferenceMismatchError",
    "check_reference",
    "difference_layers",
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


#: The shape's fields compared one by one, the first difference named (after the family).
_COMPARED = tuple(f.name for f in dataclasses.fields(ModelShape) if f.name not in ("family", "adaptations"))


def check_reference(shape: ModelShape, reference: ModelShape, model: str, base: str) -> None:
    """Nothing when ``reference`` has ``shape``'s family and every dimension; else one line naming
    the first difference (:class:`ReferenceMismatchError`)."""
    if shape.family != reference.family:
        raise ReferenceMismatchError(
            f"the reference {base} is a {reference.family} model and {model} a {shape.family} one: "
            "a centred bound needs the same family"
        )
    for name in _COMPARED:
        ours, theirs = getattr(shape, name), getattr(reference, name)
        if ours != theirs:
            raise ReferenceMismatchError(
                f"the reference {base} does not match {model}: {name} is {theirs} there and {ours} here"
            )


def _heads(weight: np.ndarray, heads: int) -> np.ndarray:
    """(H d, N) rows -> (H, d, N), each head's block of rows."""
    return weight.reshape(heads, weight.shape[0] // heads, weight.shape[1])


def stacked_attention(
    tuned: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    base: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    shape: ModelShape,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (query, key, value, attn_out) weights, in (out, in) form, of a layer with head size 2d whose
    QK_h and V_h are exactly QK_h - QK⁰_h and V_h - V⁰_h (module docstring): query head h's rows
    [W_Q[s_h]; -W⁰_Q[s_h]], key/value head g's [W_K[s_g]; W⁰_K[s_g]] and [W_V[s_g]; -W⁰_V[s_g]], and
    the output's columns [W_O[:, s_h], W⁰_O[:, s_h]]."""
    q, k, v, o = tuned
    q0, k0, v0, o0 = base
    h, h_kv = shape.num_heads, shape.num_kv_heads
    n = o.shape[0]
    queries = np.concatenate([_heads(q, h), -_heads(q0, h)], axis=1)  # (H, 2d, N)
    keys = np.concatenate([_heads(k, h_kv), _heads(k0, h_kv)], axis=1)  # (H_kv, 2d, N)
    values = np.concatenate([_heads(v, h_kv), -_heads(v0, h_kv)], axis=1)  # (H_kv, 2d, N)
    outputs = np.concatenate([o.reshape(n, h, -1), o0.reshape(n, h, -1)], axis=2)  # (N, H, 2d)
    half = outputs.shape[2] // 2
    # A head whose factors are bit for bit the base's has a difference of exactly zero; its stacked
    # factors would leave rounding of about 1e-17 in the QR core, so its query (QK) or output (V)
    # rows are zeroed: an unchanged matrix has singular values and norms of exactly 0.
    for head in range(h):
        group = shape.kv_head(head)
        if _same(q, q0, head, h) and _same(k, k0, group, h_kv):
            queries[head] = 0.0
        if _same(v, v0, group, h_kv) and np.array_equal(outputs[:, head, :half], outputs[:, head, half:]):
            outputs[:, head] = 0.0
    return (
        queries.reshape(-1, q.shape[1]),
        keys.reshape(-1, k.shape[1]),
        values.reshape(-1, v.shape[1]),
        outputs.reshape(n, -1),
    )


def _same(a: np.ndarray, b: np.ndarray, head: int, heads: int) -> bool:
    """Whether head ``head``'s rows are equal in the two (heads d, N) weights."""
    return bool(np.array_equal(_heads(a, heads)[head], _heads(b, heads)[head]))


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
    :class:`~specbound.matrices.LayerWeights` (the :class:`~specbound.loading.LayerSource` protocol)."""

    def __init__(self, tuned: LayerSource, base: LayerSource, shape: ModelShape) -> None:
        self.tuned, self.base, self.shape = tuned, base, shape

    #: A difference is never cached layer by layer (it belongs to a pair of checkpoints).
    revision = None

    def attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return stacked_attention(self.tuned.attention_weights(), self.base.attention_weights(), self.shape)

    def cross_attention_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        tuned, base = self.tuned.cross_attention_weights(), self.base.cross_attention_weights()
        if tuned is None or base is None:
            return None
        return stacked_attention(tuned, base, self.shape)

    def mlp_weight(self, field: str) -> np.ndarray:
        return self.tuned.mlp_weight(field) - self.base.mlp_weight(field)

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
