"""What the analysis knows about a model's block: sizes, matrix kinds, MLP and residual layout.

Every Transformer family that specbound reads (SPEC §11) is described by one :class:`ModelShape`:
L layers of width N, H query heads reading H_kv key/value heads of size d, an MLP of width d_ff
that is plain (x ↦ φ(x M_in) M_out) or gated (x ↦ (φ(x M_gate) ⊙ x M_in) M_out), and a residual that
is sequential (attention, then MLP) or parallel (x + Attn(x) + MLP(x)). The shape alone fixes the
list of proxy matrices and their order; the bound's formulas read it (:mod:`specbound.core.bounds`), and
so does every table and figure: nothing downstream assumes BERT's four kinds.

Each departure from the BERT encoder the paper treats is an :class:`Adaptation`, named in the
output wherever a number of such a model is shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

from .defaults import ACTIVATION_LIPSCHITZ, BERT_INITIALIZER_RANGE
from .values import is_genuine_int, is_real_number


class Kind(str, Enum):
    """The kinds of proxy matrix, in the order they are listed within a layer.

    A kind is also its text (the CLI's, the frames' and the JSON's name for it):

    Examples:
        >>> Kind("QK") is Kind.QK, Kind.M_OUT.value
        (True, 'M_out')
        >>> [kind.value for kind in ModelShape(2, 64, 4, 256).kinds]
        ['QK', 'V', 'M_in', 'M_out']
    """

    QK = "QK"
    V = "V"
    QK_X = "QK_x"  # cross-attention of an encoder-decoder's decoder layers (SPEC §12)
    V_X = "V_x"
    M_GATE = "M_gate"
    M_IN = "M_in"
    M_OUT = "M_out"

    @classmethod
    def _missing_(cls, value: object) -> Kind | None:
        """The names TransformerLens users know: its OV circuit W_V W_O of a head is our V (so ``Kind("OV")``
        is ``Kind.V`` and ``Kind("OV_x")`` the cross-attention's), its QK circuit our QK; any case."""
        if not isinstance(value, str):
            return None
        name = value.strip().upper()
        aliases = {"OV": cls.V, "OV_X": cls.V_X, "QK": cls.QK, "QK_X": cls.QK_X, "V": cls.V, "V_X": cls.V_X}
        return aliases.get(name)

    @property
    def per_head(self) -> bool:
        """QK and V (and the cross-attention's QK_x and V_x) have one matrix per query head; the MLP
        kinds one per layer."""
        return self in HEAD_KINDS

    @property
    def cross(self) -> bool:
        """QK_x and V_x: the cross-attention of a decoder layer reading the encoder's output."""
        return self in CROSS_KINDS


#: The self-attention kinds, in profile order (one matrix per query head each).
SELF_KINDS: tuple[Kind, ...] = (Kind.QK, Kind.V)
#: The cross-attention kinds of an encoder-decoder's decoder layers, after the self-attention's.
CROSS_KINDS: tuple[Kind, ...] = (Kind.QK_X, Kind.V_X)
#: Every per-head kind, in profile order.
HEAD_KINDS: tuple[Kind, ...] = (*SELF_KINDS, *CROSS_KINDS)

#: The two stacks of an encoder-decoder, in the order the model is read (encoder first).
ENCODER, DECODER = "encoder", "decoder"


class Mlp(str, Enum):
    """A plain MLP φ(x M_in) M_out, or a gated one (φ(x M_gate) ⊙ x M_in) M_out.

    Examples:
        >>> ModelShape(2, 64, 4, 256, mlp=Mlp.GATED).num_matrices  # M_gate joins: L (2H + 3)
        22
    """

    PLAIN = "plain"
    GATED = "gated"


class Residual(str, Enum):
    """Sequential blocks (attention, then MLP) or a parallel residual x + Attn(x) + MLP(x).

    Examples:
        >>> ModelShape(2, 64, 4, 256, residual=Residual.PARALLEL).parallel
        True
    """

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"


class Adaptation(str, Enum):
    """A departure from the BERT encoder of the paper's proxies (SPEC §11), named in every output.

    Examples:
        >>> Adaptation.CAUSAL.value
        'causal'
        >>> specbound.analyze("minilm-l6").shape.adaptations  # a BERT encoder: the paper's own block
        ()
    """

    CAUSAL = "causal"
    ROTARY = "rotary"
    PARTIAL_ROTARY = "partial rotary"
    GROUPED_QUERY = "grouped-query attention"
    GATED_MLP = "gated MLP"
    PARALLEL_RESIDUAL = "parallel residual"
    QK_NORM = "QK-norm"
    CLIPPED_QKV = "clipped QKV"
    SOFTCAPPING = "softcapping"
    SLIDING_WINDOW = "sliding window"
    ALIBI = "ALiBi"
    ROUTER_FIXED = "router held fixed"
    IN_SERIES = "encoder-decoder in series"
    RELATIVE_POSITION_BIAS = "relative position bias"

    @property
    def explanation(self) -> str:
        """The adaptation in plain words, for the CLI's header, the model card and the manual's Families page."""
        return ADAPTATION_TEXT[self]


ADAPTATION_TEXT: dict[Adaptation, str] = {
    Adaptation.CAUSAL: "causal attention: each token attends to earlier tokens only (a decoder); the matrices are "
    "the same, the mask is left out like every other nonlinearity",
    Adaptation.ROTARY: "rotary position embeddings: QK is the position-free slice Q_hᵀ K_g (the form at offset 0)",
    Adaptation.PARTIAL_ROTARY: "rotary position embeddings on part of each head: QK is the position-free slice "
    "Q_hᵀ K_g (the form at offset 0)",
    Adaptation.GROUPED_QUERY: "grouped-query attention: several query heads share one key/value head; QK and V are "
    "still one matrix per query head",
    Adaptation.GATED_MLP: "gated MLP: a third matrix M_gate, and the MLP's input norm ν = 2 ‖M_gate‖₂ ‖M_in‖₂ where "
    "the BERT formula has ‖M_in‖₂",
    Adaptation.PARALLEL_RESIDUAL: "parallel residual x + Attn(x) + MLP(x): the two branches add instead of "
    "composing, in the depth factor α and in the attention kinds' local factors",
    Adaptation.QK_NORM: "QK-norm: queries and keys are normalised (RMS or layer norm) before their product; the "
    "norm is left out, like every other norm, so QK is Q_hᵀ K_g of the projection weights",
    Adaptation.CLIPPED_QKV: "clipped QKV: queries, keys and values are clamped to [-c, c]; the clamp is 1-Lipschitz "
    "and left out, like every other nonlinearity",
    Adaptation.SOFTCAPPING: "attention-logit softcapping c·tanh(logits / c): a nonlinearity on the logits, left out "
    "like every other nonlinearity; QK is the form inside it",
    Adaptation.SLIDING_WINDOW: "sliding-window attention: some layers attend to recent tokens only; a mask, left out "
    "like the causal mask, the matrices unchanged",
    Adaptation.ALIBI: "ALiBi: a fixed bias by distance is added to the attention logits; it does not depend on the "
    "input, so the QK matrix is unchanged",
    Adaptation.ROUTER_FIXED: "mixture of experts, router held fixed: each token's gate values are taken as given "
    "weights summing to at most 1, so the layer's MLP factor is the largest expert's (plus the shared expert's); "
    "top-k routing jumps when the ranking of experts changes, so it is not continuous in its input, and the bound "
    "does not cover that jump",
    Adaptation.IN_SERIES: "encoder-decoder read in series: the encoder's layers, then the decoder's, each decoder "
    "layer three sub-blocks in turn (self-attention, cross-attention QK_x and V_x on the encoder's output, MLP); "
    "the encoder's output reaching every cross-attention is not bounded apart",
    Adaptation.RELATIVE_POSITION_BIAS: "relative position bias: a learned bias by distance is added to the "
    "attention logits; it does not depend on the input, so the QK matrix is unchanged",
}

#: The label of a mixture-of-experts layer's shared expert (the routed experts are numbered 0..E-1).
SHARED_EXPERT = "shared"

#: Which MLP of a layer a matrix belongs to: None (a dense layer), a routed expert e or the shared one.
Expert = int | str | None


def expert_label(expert: Expert) -> str:
    """'expert 3', 'shared expert', or 'MLP' for a dense layer's: how pages and figures name an MLP."""
    if expert is None:
        return "MLP"
    return "shared expert" if expert == SHARED_EXPERT else f"expert {expert}"


@dataclass(frozen=True)
class ModelShape:
    """The sizes and layout the analysis needs (SPEC §11), the same for every family.

    ``num_kv_heads`` and ``head_dim`` given as 0 (the default) become ``num_heads`` and N / H (which
    must then divide); the rest defaults to a BERT encoder, so ``ModelShape(L, N, H, d_ff)`` is one.

    Examples:
        >>> shape = ModelShape(num_layers=6, hidden_size=384, num_heads=12, ffn_size=1536)  # MiniLM's
        >>> shape.head_dim, shape.num_kv_heads, shape.num_matrices  # d = N / H; L (2H + 2) matrices
        (32, 12, 156)
        >>> ModelShape(2, 64, 8, 256, num_kv_heads=2).num_kv_heads  # grouped-query attention
        2
        >>> ModelShape(2, 64, 6, 256)
        Traceback (most recent call last):
        ...
        ValueError: hidden size 64 is not divisible by 6 attention heads
    """

    num_layers: int
    hidden_size: int
    num_heads: int
    ffn_size: int
    num_kv_heads: int = 0  # 0: one key/value head per query head
    head_dim: int = 0  # 0: hidden_size // num_heads
    mlp: Mlp = Mlp.PLAIN
    residual: Residual = Residual.SEQUENTIAL
    family: str = "bert"
    activation: str = "gelu"
    adaptations: tuple[Adaptation, ...] = ()
    #: standard deviation of the family's weight initialisation, for the random-initialised twin
    initializer_range: float = BERT_INITIALIZER_RANGE
    #: mixtures of experts (SPEC §12): E routed experts of width ``ffn_size`` per layer (0: a dense MLP),
    #: each token routed to ``experts_per_token`` of them, and a shared expert of this width (0: none)
    num_experts: int = 0
    experts_per_token: int = 0
    shared_expert_size: int = 0
    #: encoder-decoders (SPEC §12): the first ``encoder_layers`` of the ``num_layers`` are the encoder's,
    #: the rest the decoder's, each with a cross-attention (0: one stack)
    encoder_layers: int = 0
    #: d_ff of an encoder-decoder's decoder layers where it differs from the encoder's ``ffn_size``
    #: (BART's ``decoder_ffn_dim``); 0, and given equal to ``ffn_size``, mean the same width
    decoder_ffn_size: int = 0

    def __post_init__(self) -> None:
        for name in ("num_layers", "hidden_size", "num_heads", "ffn_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.num_kv_heads == 0:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        if self.head_dim == 0:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"hidden size {self.hidden_size} is not divisible by {self.num_heads} attention heads")
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_heads)
        if self.num_kv_heads < 1 or self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.num_heads} query heads cannot share {self.num_kv_heads} key/value heads evenly")
        if self.head_dim < 1:
            raise ValueError(f"the head size must be a positive integer, got {self.head_dim}")
        object.__setattr__(self, "mlp", Mlp(self.mlp))
        object.__setattr__(self, "residual", Residual(self.residual))
        object.__setattr__(self, "adaptations", tuple(Adaptation(a) for a in self.adaptations))
        self._check_experts()
        self._check_stacks()
        if self.activation not in ACTIVATION_LIPSCHITZ:
            raise ValueError(
                f"activation '{self.activation}' has no known Lipschitz constant "
                f"(supported: {', '.join(sorted(ACTIVATION_LIPSCHITZ))})"
            )

    def _check_experts(self) -> None:
        for name in ("num_experts", "experts_per_token", "shared_expert_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {getattr(self, name)}")
        if not self.num_experts:
            if self.experts_per_token or self.shared_expert_size:
                raise ValueError("experts per token and a shared expert need routed experts (num_experts > 0)")
            return
        if not 1 <= self.experts_per_token <= self.num_experts:
            raise ValueError(
                f"each token must be routed to 1..{self.num_experts} experts, got {self.experts_per_token}"
            )
        if self.mlp is not Mlp.GATED:
            raise ValueError("the experts of a mixture of experts are gated MLPs")

    def _check_stacks(self) -> None:
        if not is_genuine_int(self.encoder_layers) or self.encoder_layers < 0:
            raise ValueError(f"encoder_layers must be a non-negative integer, got {self.encoder_layers}")
        if not is_genuine_int(self.decoder_ffn_size) or self.decoder_ffn_size < 0:
            raise ValueError(f"decoder_ffn_size must be a non-negative integer, got {self.decoder_ffn_size}")
        if self.decoder_ffn_size == self.ffn_size:
            object.__setattr__(self, "decoder_ffn_size", 0)  # one width for both stacks: one way to say it
        if self.decoder_ffn_size and not self.encoder_layers:
            raise ValueError("a decoder's own feed-forward size needs an encoder-decoder (encoder_layers > 0)")
        if self.encoder_layers and not self.encoder_layers < self.num_layers:
            raise ValueError(
                f"an encoder-decoder needs decoder layers: {self.encoder_layers} encoder layers of {self.num_layers}"
            )
        if self.encoder_layers and self.moe:
            raise ValueError("an encoder-decoder with experts is not supported")
        if self.encoder_layers and self.parallel:
            raise ValueError("an encoder-decoder with a parallel residual is not supported")

    # --- the stacks ----------------------------------------------------------------------------
    @property
    def encoder_decoder(self) -> bool:
        """Two stacks: ``encoder_layers`` encoder layers, then decoder layers with cross-attention."""
        return self.encoder_layers > 0

    @property
    def decoder_layers(self) -> int:
        """The decoder's layers of an encoder-decoder (0 for one stack)."""
        return self.num_layers - self.encoder_layers if self.encoder_decoder else 0

    def stack_of(self, layer: int) -> str | None:
        """'encoder' or 'decoder' for a layer of an encoder-decoder (layers count from the encoder's
        first), None for a model of one stack."""
        if not self.encoder_decoder:
            return None
        return ENCODER if layer < self.encoder_layers else DECODER

    def stack_layer(self, layer: int) -> int:
        """A layer's index within its stack (the layer itself for a model of one stack)."""
        return layer - self.encoder_layers if self.stack_of(layer) == DECODER else layer

    def has_cross(self, layer: int) -> bool:
        """Whether a layer has a cross-attention (a decoder layer of an encoder-decoder)."""
        return self.stack_of(layer) == DECODER

    def head_kinds_of(self, layer: int) -> tuple[Kind, ...]:
        """The per-head kinds of one layer, in profile order: QK, V, then QK_x, V_x in a decoder layer
        of an encoder-decoder."""
        return HEAD_KINDS if self.has_cross(layer) else SELF_KINDS

    def layers_of(self, stack: str | None) -> tuple[int, ...]:
        """The layers (in series) of one stack of an encoder-decoder, or every layer for None."""
        if stack is not None and stack not in (ENCODER, DECODER):
            raise ValueError(f"a stack is '{ENCODER}' or '{DECODER}', got {stack!r}")
        return tuple(layer for layer in range(self.num_layers) if stack is None or self.stack_of(layer) == stack)

    def stack_head_kinds(self, stack: str | None) -> tuple[Kind, ...]:
        """The per-head kinds of one stack's layers (QK_x and V_x in the decoder's), or of the model's."""
        present = {kind for layer in self.layers_of(stack) for kind in self.head_kinds_of(layer)}
        return tuple(kind for kind in HEAD_KINDS if kind in present)

    def layers_with(self, kind: Kind) -> tuple[int, ...]:
        """The layers that have matrices of ``kind``: every layer, or the decoder's for QK_x and V_x
        (none when the model has no such kind)."""
        kind = Kind(kind)
        if kind.cross:
            return tuple(range(self.encoder_layers, self.num_layers)) if self.encoder_decoder else ()
        return tuple(range(self.num_layers)) if kind in self.kinds else ()

    # --- the matrices --------------------------------------------------------------------------
    @property
    def moe(self) -> bool:
        """A mixture of experts: each layer's MLP is E routed experts (and possibly a shared one)."""
        return self.num_experts > 0

    @property
    def experts(self) -> tuple[Expert, ...]:
        """The MLPs of a layer, in profile order: (None,) for a dense layer; the routed experts 0..E-1,
        then ``"shared"`` when there is a shared expert."""
        if not self.moe:
            return (None,)
        shared = (SHARED_EXPERT,) if self.shared_expert_size else ()
        return (*range(self.num_experts), *shared)

    def expert_ffn_size(self, expert: Expert, layer: int | None = None) -> int:
        """d_ff of one MLP of a layer: the shared expert's own width; a decoder layer's of an
        encoder-decoder whose decoder has its own (:attr:`decoder_ffn_size`; ``layer`` None reads as one
        of the encoder's); else ``ffn_size``."""
        if expert == SHARED_EXPERT:
            return self.shared_expert_size
        if self.decoder_ffn_size and layer is not None and self.stack_of(layer) == DECODER:
            return self.decoder_ffn_size
        return self.ffn_size

    @property
    def max_ffn_size(self) -> int:
        """The widest MLP of any layer (an expert, the shared expert, either stack)."""
        return max(self.decoder_ffn_size, *(self.expert_ffn_size(expert) for expert in self.experts))

    @property
    def stack_ffn_sizes(self) -> dict[str, int] | None:
        """d_ff of each stack where an encoder-decoder's two differ (``{"encoder": ..., "decoder": ...}``),
        else None (one ``ffn_size`` says it all)."""
        if not self.decoder_ffn_size:
            return None
        return {ENCODER: self.ffn_size, DECODER: self.decoder_ffn_size}

    @property
    def gated(self) -> bool:
        return self.mlp is Mlp.GATED

    @property
    def parallel(self) -> bool:
        return self.residual is Residual.PARALLEL

    @property
    def layer_kinds(self) -> tuple[Kind, ...]:
        """The per-layer (MLP) kinds, in profile order: M_gate (gated MLPs only), M_in, M_out."""
        return (Kind.M_GATE, Kind.M_IN, Kind.M_OUT) if self.gated else (Kind.M_IN, Kind.M_OUT)

    @property
    def kinds(self) -> tuple[Kind, ...]:
        """Every kind this model has, in profile order (QK_x and V_x for an encoder-decoder only)."""
        heads = HEAD_KINDS if self.encoder_decoder else SELF_KINDS
        return (*heads, *self.layer_kinds)

    @property
    def head_kinds(self) -> tuple[Kind, ...]:
        """The per-head kinds this model has, in profile order."""
        return tuple(kind for kind in self.kinds if kind.per_head)

    @property
    def matrices_per_layer(self) -> int:
        """2H + 2, or 2H + 3 with a gated MLP; 2H + 3E (+ 3 with a shared expert) for a mixture of experts;
        for an encoder-decoder, an encoder layer's (a decoder layer has 2H more: :meth:`layer_size`)."""
        return 2 * self.num_heads + len(self.experts) * len(self.layer_kinds)

    def layer_size(self, layer: int) -> int:
        """The matrices of one layer: :attr:`matrices_per_layer`, 2H more with a cross-attention."""
        return self.matrices_per_layer + (2 * self.num_heads if self.has_cross(layer) else 0)

    @cached_property
    def layer_starts(self) -> tuple[int, ...]:
        """Row of each layer's first matrix in profile order, and the total last: (L + 1,)."""
        starts = [0]
        for layer in range(self.num_layers):
            starts.append(starts[-1] + self.layer_size(layer))
        return tuple(starts)

    @property
    def num_matrices(self) -> int:
        """L (2H + 2), L (2H + 3) with a gated MLP, L (2H + 3E [+ 3]) for a mixture of experts,
        L_enc (2H + k) + L_dec (4H + k) for an encoder-decoder."""
        return self.num_layers * self.matrices_per_layer + 2 * self.num_heads * self.decoder_layers

    @property
    def matrix_count_formula(self) -> str:
        """'L(2H + 2)', 'L(2H + 3)' with a gated MLP, 'L(2H + 3E)' or 'L(2H + 3E + 3)' with experts,
        'L_enc(2H + 2) + L_dec(4H + 2)' for an encoder-decoder: how the matrices are counted, for captions."""
        k = len(self.layer_kinds)
        if self.encoder_decoder:
            return f"L_enc(2H + {k}) + L_dec(4H + {k})"
        if not self.moe:
            return f"L(2H + {k})"
        return f"L(2H + {k}E + {k})" if self.shared_expert_size else f"L(2H + {k}E)"

    @property
    def queries_per_kv_head(self) -> int:
        return self.num_heads // self.num_kv_heads

    def kv_head(self, head: int) -> int:
        """g(h) = ⌊h / (H / H_kv)⌋, the key/value head query head h reads (transformers' repeat_kv)."""
        return head // self.queries_per_kv_head

    @property
    def l_phi(self) -> float:
        """The activation's Lipschitz constant sup |φ′| (SPEC §11), the default L_φ of the bound."""
        return ACTIVATION_LIPSCHITZ[self.activation]

    @property
    def layer_weight_values(self) -> int:
        """Values of one layer's weights the analysis reads: W_Q, W_K, W_V, W_O (twice in a decoder layer
        of an encoder-decoder) and the MLP matrices."""
        n, d = self.hidden_size, self.head_dim
        attention = (2 * self.num_heads * d * n + 2 * self.num_kv_heads * d * n) * (2 if self.decoder_layers else 1)
        mlp = max(sum(self.expert_ffn_size(e, layer) for e in self.experts) for layer in range(self.num_layers))
        return attention + len(self.layer_kinds) * n * mlp

    @property
    def is_bert_like(self) -> bool:
        """No adaptation: the case the paper's BERT-adapted proxies treat."""
        return not self.adaptations

    # --- serialisation (the profile cache and atlas files) -----------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values for every field (the expert fields only for a mixture of experts, so that a
        dense model's files are as they were before experts existed)."""
        values = dataclasses.asdict(self)
        values["mlp"], values["residual"] = self.mlp.value, self.residual.value
        values["adaptations"] = [a.value for a in self.adaptations]
        if not self.moe:
            for name in ("num_experts", "experts_per_token", "shared_expert_size"):
                del values[name]
        if not self.encoder_decoder:
            del values["encoder_layers"]
        if not self.decoder_ffn_size:
            del values["decoder_ffn_size"]
        return values

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ModelShape:
        """The inverse of :meth:`to_dict`; a dict with the four sizes only (files written before the
        other fields existed) is a BERT encoder. ValueError for anything else."""
        sizes: dict[str, int] = {}
        for name in ("num_layers", "hidden_size", "num_heads", "ffn_size", "num_kv_heads", "head_dim"):
            value = values.get(name)
            if value is None and name in ("num_kv_heads", "head_dim"):
                continue
            if not is_genuine_int(value) or int(value) < 1:
                raise ValueError(f"the shape's {name} must be a positive integer")
            sizes[name] = int(value)
        optional = ("num_experts", "experts_per_token", "shared_expert_size", "encoder_layers", "decoder_ffn_size")
        for name in optional:  # absent before
            value = values.get(name, 0)
            if not is_genuine_int(value) or int(value) < 0:
                raise ValueError(f"the shape's {name} must be a non-negative integer")
            sizes[name] = int(value)
        extra: dict[str, Any] = {}
        for name, kind in (("mlp", str), ("residual", str), ("family", str), ("activation", str)):
            if name in values:
                if not isinstance(values[name], kind):
                    raise ValueError(f"the shape's {name} must be a string")
                extra[name] = values[name]
        if "adaptations" in values:
            adaptations = values["adaptations"]
            if not isinstance(adaptations, list) or not all(isinstance(a, str) for a in adaptations):
                raise ValueError("the shape's adaptations must be a list of names")
            extra["adaptations"] = tuple(adaptations)
        if "initializer_range" in values:
            sigma = values["initializer_range"]
            if not is_real_number(sigma) or not 0 < sigma < 1e3:
                raise ValueError("the shape's initializer_range must be a positive number")
            extra["initializer_range"] = float(sigma)
        return cls(**sizes, **extra)  # type: ignore[arg-type]  # each field checked above
