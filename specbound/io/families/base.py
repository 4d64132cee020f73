"""The one interface every family adapter implements.

An adapter knows, for one architecture (SPEC §11): how to read its config into a
:class:`~specbound.core.architecture.ModelShape`; the key prefixes its checkpoints may carry
(``transformer.``, ``model.``, ...) and the root of its layers; the name and stored shape of every
tensor of a layer it reads, so that :mod:`specbound.io.checkpoints` checks dtypes and shapes from the
file headers before any byte is converted; and how to turn those tensors into the canonical
(out, in) :class:`~specbound.core.matrices.LayerWeights` (a pure function of arrays). Nothing outside
the adapters names a weight. The config readers the adapters share are :mod:`specbound.io.families.config`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ...core.architecture import Kind, ModelShape
from ...core.errors import UnsupportedModelError
from ...core.matrices import CROSS_FIELDS, LayerWeights, mlp_field, mlp_fields
from ...core.profile import MatrixId
from ...core.text import quoted

#: The attention fields of each per-head kind (the cross-attention's kinds read the same fields of its roles).
_HEAD_FIELDS: dict[Kind, tuple[str, ...]] = {Kind.QK: ("query", "key"), Kind.V: ("value", "attn_out")}


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a layer: its key below ``{prefix}{root}.{layer}.`` and its stored shape."""

    name: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class TensorSlice:
    """One matrix stored inside a fused 3-D tensor (transformers' experts, ``experts.gate_up_proj`` of
    shape (E, 2 d_ff, N)): block ``index`` of its first axis, rows ``rows`` of that block (all when
    None). ``whole`` is the fused tensor's shape the config implies, checked before any byte is read.

    Example: expert 3's up projection in a fused ``gate_up_proj`` of 8 experts of width 14336 on 4096
    is ``TensorSlice("model.layers.0.mlp.experts.gate_up_proj", 3, (14336, 28672), (8, 28672, 4096))``,
    a (14336, 4096) matrix.
    """

    source: str
    index: int
    rows: tuple[int, int] | None
    whole: tuple[int, int, int]

    @property
    def shape(self) -> tuple[int, int]:
        """The matrix's (out, in) shape."""
        rows = self.whole[1] if self.rows is None else self.rows[1] - self.rows[0]
        return rows, self.whole[2]

    def check(self, stored: tuple[int, ...], config: str = "config.json") -> None:
        """Nothing when the fused tensor has the shape its model's ``config`` implies (:attr:`whole`);
        else one line naming both (:class:`~specbound.core.errors.UnsupportedModelError`). The one check
        of a fused tensor, on disk from the file's header before a byte is read and in memory before a
        view of it is made: a tensor of more rows than 2 d_ff would otherwise give views that silently
        leave rows out.

        Example:
            >>> piece = TensorSlice("experts.gate_up_proj", 0, (0, 4), (2, 8, 3))
            >>> piece.check((2, 10, 3), "the config")
            Traceback (most recent call last):
            ...
            specbound.core.errors.UnsupportedModelError: fused weight 'experts.gate_up_proj' has shape (2, 10, 3)...
            >>> piece.check((2, 8, 3))  # as the config implies: nothing
        """
        if tuple(stored) != self.whole:
            raise UnsupportedModelError(
                f"fused weight '{quoted(self.source)}' has shape {tuple(stored)}, but {config} implies {self.whole}"
            )

    def take(self, fused: Any) -> Any:
        """The matrix as a view of the fused tensor (a numpy array, a memory map or a torch tensor)."""
        block = fused[self.index]  # (rows, columns) of one expert
        return block if self.rows is None else block[self.rows[0] : self.rows[1]]


@dataclass(frozen=True)
class LayerLayout:
    """Where a layer's tensors live: keys ``{prefix}{root}.{layer}.{spec.name}``, by role."""

    root: str
    tensors: Mapping[str, TensorSpec]


class FamilyAdapter(ABC):
    """How one architecture's checkpoints become the canonical per-layer weights."""

    #: the ``model_type`` values of config.json this adapter reads
    model_types: ClassVar[tuple[str, ...]]
    #: the family's name in outputs ("BERT", "GPT-2", ...)
    label: ClassVar[str]
    #: where the layers live: tensor keys are ``{prefix}{root}.{layer}.{name}``
    root: ClassVar[str]
    #: the prefixes a checkpoint of this family may carry before ``root`` (a bare model has none)
    prefixes: ClassVar[tuple[str, ...]]
    #: whether the family's layers hold experts (a config declaring experts is refused otherwise)
    reads_experts: ClassVar[bool] = False
    #: whether every weight of the family's layers is a transformers ``Conv1D``, stored (in, out) (GPT-2): the layout
    #: peft reads a LoRA update and the intruder dimensions' singular vectors in (SPEC §14b)
    conv1d_layers: ClassVar[bool] = False

    @abstractmethod
    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        """The model's shape from its config; CheckpointError or UnsupportedModelError with one line."""

    @abstractmethod
    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        """Every tensor one layer reads, by role, with the shape the file must declare."""

    @abstractmethod
    def to_weights(self, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> LayerWeights:
        """The canonical (out, in) weights of one layer from its tensors (by role), a pure function."""

    def stack_layouts(self, shape: ModelShape) -> tuple[LayerLayout, LayerLayout] | None:
        """An encoder-decoder's layouts (SPEC §12), the encoder's then the decoder's, each numbering its
        own layers from 0 (``encoder.block.0``, ``decoder.block.0``); None for a model of one stack."""
        return None

    def cross_roles(self, shape: ModelShape) -> tuple[str, ...]:
        """The roles of :meth:`tensors` that hold a decoder layer's cross-attention (none by default)."""
        return ()

    def layouts(self, shape: ModelShape) -> tuple[LayerLayout, ...]:
        """The key layouts a checkpoint of this family may use, tried in order: the saved one, then any
        other (a model held in memory by a newer transformers may name its modules differently)."""
        return (LayerLayout(self.root, self.tensors(shape)),)

    def fused_slices(self, names: Iterable[str], shape: ModelShape) -> dict[str, TensorSlice]:
        """The matrices that the tensors named ``names`` hold fused, by the key each has in the layout
        this adapter declares (none by default; the experts of a mixture of experts,
        :class:`~specbound.io.families.moe.MoeAdapter`). A checkpoint reads each such key as its slice of
        the fused tensor, on disk and in memory alike."""
        return {}

    def state_views(self, state: Mapping[str, Any], shape: ModelShape) -> Mapping[str, Any]:
        """A model's state dict as this adapter reads it: itself, plus a view under its declared key of
        every matrix that :meth:`fused_slices` finds fused (transformers holds the experts of a mixture
        of experts fused in memory). A fused tensor of another shape than the config implies is refused
        in one line by :meth:`TensorSlice.check`, the check a fused tensor on disk passes."""
        views: dict[str, Any] = {}
        for key, piece in self.fused_slices([name for name in state if isinstance(name, str)], shape).items():
            fused = state[piece.source]
            piece.check(tuple(int(n) for n in getattr(fused, "shape", ())), "the model's config")
            views[key] = piece.take(fused)
        return {**state, **views} if views else state

    def mlp_roles(self, field: str, shape: ModelShape) -> tuple[str, ...]:
        """The roles of :meth:`tensors` one MLP field (``gate``, ``ffn_in``, ``ffn_out`` or an expert's,
        :func:`~specbound.core.matrices.mlp_field`) is read from: its own tensor by default; a fused tensor
        (Phi-3's ``gate_up_proj``, transformers' 3-D expert tensors) serves several fields."""
        return (field,)

    def mlp_tensor_roles(self, shape: ModelShape) -> frozenset[str]:
        """Every role of :meth:`tensors` an MLP field reads."""
        return frozenset(role for field in mlp_fields(shape) for role in self.mlp_roles(field, shape))

    def attention_roles(self, shape: ModelShape) -> tuple[str, ...]:
        """The roles of :meth:`tensors` that hold self-attention weights (every role no MLP field and no
        cross-attention reads)."""
        other = self.mlp_tensor_roles(shape) | set(self.cross_roles(shape))
        return tuple(role for role in self.tensors(shape) if role not in other)

    def attention_weights(
        self, tensors: Mapping[str, np.ndarray], shape: ModelShape
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(query, key, value, attn_out) in (out, in) form from the attention roles' tensors alone.

        :meth:`to_weights` is pure and each MLP field of its result depends on the tensors of its
        :meth:`mlp_roles` only, so the MLP tensors not read yet stand in as zero-stride arrays of
        their stored shape (no memory) and are dropped.
        """
        weights = self.to_weights({**tensors, **_unread(self, shape, exclude=tuple(tensors))}, shape)
        return weights.query, weights.key, weights.value, weights.attn_out

    def cross_attention_weights(
        self, tensors: Mapping[str, np.ndarray], shape: ModelShape
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """A decoder layer's cross-attention (query, key, value, attn_out) from the tensors of
        :meth:`cross_roles` alone, as :meth:`attention_weights` reads the self-attention's."""
        weights = self.to_weights({**tensors, **_unread(self, shape, exclude=tuple(tensors))}, shape)
        cross = weights.cross_attention_weights()
        if cross is None:
            raise ValueError(f"the {self.label} adapter reads no cross-attention")
        return cross

    def mlp_weight(self, field: str, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> np.ndarray:
        """One MLP weight (``gate``, ``ffn_in`` or ``ffn_out``) in (out, in) form from the tensors of its
        :meth:`mlp_roles` (by role); a view of them wherever the layout allows (every adapter's does)."""
        weights = self.to_weights({**_unread(self, shape, exclude=tuple(tensors)), **tensors}, shape)
        return weights.mlp_weight(field)

    def matrix_tensors(self, shape: ModelShape, matrix: MatrixId) -> tuple[str, ...]:
        """The checkpoint keys (below the model's prefix, in the layout the family saves) of the tensors a
        proxy matrix is built from: for QK the query's and key's, for V the value's and the output
        projection's (a fused tensor such as GPT-2's ``c_attn`` where the family stores them together),
        for an MLP kind its field's tensor (of its expert, in a mixture of experts).

        Example: ``BertAdapter().matrix_tensors(shape, MatrixId(0, Kind.QK, 3))`` is
        ``("encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.key.weight")``.
        """
        layer = matrix.layer
        layout = self.layouts(shape)[0]
        stacks = self.stack_layouts(shape)
        if stacks is not None:
            in_decoder = layer >= shape.encoder_layers
            layout = stacks[1] if in_decoder else stacks[0]
            layer = layer - shape.encoder_layers if in_decoder else layer
        if matrix.kind.per_head:
            fields = _HEAD_FIELDS[Kind.QK if matrix.kind in (Kind.QK, Kind.QK_X) else Kind.V]
            if matrix.kind.cross:
                roles, available = [CROSS_FIELDS[f] for f in fields], set(self.cross_roles(shape))
                declared = set(CROSS_FIELDS.values())
            else:
                roles, available = list(fields), set(self.attention_roles(shape))
                declared = set(CROSS_FIELDS)
            present = [role for role in roles if role in available]
            # a field the family does not store alone lives in a fused tensor (GPT-2's c_attn, Phi-3's qkv_proj)
            chosen = present if len(present) == len(roles) else [*sorted(available - declared), *present]
        else:
            chosen = list(self.mlp_roles(mlp_field(matrix.kind, matrix.expert), shape))
        return tuple(f"{layout.root}.{layer}.{layout.tensors[role].name}" for role in chosen if role in layout.tensors)

    def stores_in_out(self, key: str) -> bool:
        """Whether the weight under checkpoint key ``key`` belongs to a ``Conv1D`` module, stored (in, out),
        rather than to an ``nn.Linear``, stored (out, in). peft decides the layout of a LoRA update from
        this type when it loads an adapter (``fan_in_fan_out``), whatever the adapter's config says, so
        specbound decides it here: a family with :attr:`conv1d_layers` has it for every weight of its
        layers (``{prefix}{root}.{layer}.….weight``), and no other weight (a task head) is one.

        Example:
            >>> from specbound.io.families.gpt2 import GPT2Adapter
            >>> gpt2 = GPT2Adapter()
            >>> gpt2.stores_in_out("transformer.h.0.attn.c_proj.weight"), gpt2.stores_in_out("score.weight")
            (True, False)
        """
        if not self.conv1d_layers:
            return False
        layer = re.compile(rf"{re.escape(self.root)}\.\d+\..+\.weight")
        return any(key.startswith(prefix) and layer.fullmatch(key[len(prefix) :]) for prefix in self.prefixes)

    def init_scale(self, field: str, shape: ModelShape) -> float:
        """Factor on σ with which the family initialises one canonical weight (a LayerWeights field)."""
        return 1.0


class LinearAdapter(FamilyAdapter):
    """A family whose layer weights are all ``nn.Linear`` (out, in), one tensor per canonical field:
    ``names`` maps each field of :class:`~specbound.core.matrices.LayerWeights` to its key, and the tensors
    are the canonical weights as they are."""

    names: ClassVar[dict[str, str]]

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        return linear_specs(self.names, shape)

    def to_weights(self, tensors: Mapping[str, np.ndarray], shape: ModelShape) -> LayerWeights:
        return LayerWeights.of_fields(tensors)


def linear_specs(names: Mapping[str, str], shape: ModelShape, layer: int | None = None) -> dict[str, TensorSpec]:
    """The specs of ``nn.Linear`` weights named by field, with the (out, in) shapes the model implies
    (for ``layer``, whose stack may have its own MLP width; any layer of one stack when None)."""
    expected = LayerWeights.expected_shapes(shape, layer)
    return {role: TensorSpec(name, expected[role]) for role, name in names.items()}


def _unread(adapter: FamilyAdapter, shape: ModelShape, exclude: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Zero-stride stand-ins (np.broadcast_to, no memory) for the tensors of a layer not read yet."""
    return {
        role: np.broadcast_to(np.float64(0.0), spec.shape)
        for role, spec in adapter.tensors(shape).items()
        if role not in exclude
    }
