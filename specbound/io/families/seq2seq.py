"""Encoder-decoders (SPEC §12): T5 and mT5, BART and mBART.

Two stacks of layers: the encoder's (self-attention, MLP) and the decoder's (causal self-attention,
cross-attention on the encoder's output, MLP). specbound numbers their layers in one sequence, the
encoder's first (the order the bound reads them in, adaptation ``encoder-decoder in series``), and
each stack has its own key layout, numbering its layers from 0 (:meth:`stack_layouts`). Every weight
is an ``nn.Linear``; a decoder layer's cross-attention weights are the ``cross_*`` fields of
:class:`~specbound.core.matrices.LayerWeights`, from which QK_x and V_x are formed as QK and V are.

T5 keeps one sub-layer list per block (``layer.0`` self-attention, ``layer.1`` the decoder's
cross-attention, then the feed-forward), no biases, a learned relative position bias added to the
logits (input-independent: the QK matrix is unchanged) and no 1/√d scale (left out everywhere
anyway). ``feed_forward_proj`` is ``relu`` (``wi``, ``wo``) or ``gated-gelu`` (``wi_0`` the gate,
``wi_1`` the up projection, GELU-tanh as transformers reads it); T5 draws each weight with its own
scale of ``initializer_factor`` (:meth:`T5Adapter.init_scale`). BART and mBART name their weights as
OPT does, one set of sizes per stack: the heads must agree (every layer's QK and V are read with one H),
the feed-forward widths need not (``decoder_ffn_size``: each stack's MLP matrices carry their own d_ff).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import Adaptation, Mlp, ModelShape
from ...core.errors import UnsupportedModelError
from ...core.matrices import CROSS_FIELDS
from ...core.text import described
from .base import LayerLayout, LinearAdapter, TensorSpec, linear_specs
from .config import activation, build_shape, initializer_range, optional_int, positive_int
from .opt import OPTAdapter


class EncoderDecoderAdapter(LinearAdapter):
    """Two stacks of ``nn.Linear`` layers: :meth:`encoder_names` below ``root`` (the encoder's layers,
    read first), and below ``decoder_root`` :meth:`decoder_names` (the same fields, and the
    cross-attention's)."""

    decoder_root: ClassVar[str]

    @abstractmethod
    def encoder_names(self, shape: ModelShape) -> dict[str, str]:
        """An encoder layer's key below ``{root}.{layer}.`` by field."""

    @abstractmethod
    def decoder_names(self, shape: ModelShape) -> dict[str, str]:
        """A decoder layer's key below ``{decoder_root}.{layer}.`` by field, the cross-attention's included."""

    def tensors(self, shape: ModelShape) -> dict[str, TensorSpec]:
        """Every tensor a layer may read: a decoder layer's (an encoder layer reads all but the cross-attention's),
        with the decoder's MLP width (BART's may differ from the encoder's)."""
        return linear_specs(self.decoder_names(shape), shape, layer=shape.encoder_layers)

    def layouts(self, shape: ModelShape) -> tuple[LayerLayout, ...]:
        return (self.stack_layouts(shape)[0],)

    def stack_layouts(self, shape: ModelShape) -> tuple[LayerLayout, LayerLayout]:
        return (
            LayerLayout(self.root, linear_specs(self.encoder_names(shape), shape, layer=0)),
            LayerLayout(self.decoder_root, self.tensors(shape)),
        )

    def cross_roles(self, shape: ModelShape) -> tuple[str, ...]:
        return tuple(CROSS_FIELDS.values())


class T5Adapter(EncoderDecoderAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("t5", "mt5")
    label = "T5"
    root = "encoder.block"
    decoder_root = "decoder.block"
    prefixes: ClassVar[tuple[str, ...]] = ("",)
    _SELF: ClassVar[dict[str, str]] = {"query": "q", "key": "k", "value": "v", "attn_out": "o"}

    @staticmethod
    def _attention(sub_layer: int, module: str, fields: Mapping[str, str]) -> dict[str, str]:
        return {field: f"layer.{sub_layer}.{module}.{name}.weight" for field, name in fields.items()}

    def _mlp(self, sub_layer: int, shape: ModelShape) -> dict[str, str]:
        up = {"gate": "wi_0", "ffn_in": "wi_1"} if shape.gated else {"ffn_in": "wi"}
        return {
            field: f"layer.{sub_layer}.DenseReluDense.{name}.weight" for field, name in {**up, "ffn_out": "wo"}.items()
        }

    def encoder_names(self, shape: ModelShape) -> dict[str, str]:
        return {**self._attention(0, "SelfAttention", self._SELF), **self._mlp(1, shape)}

    def decoder_names(self, shape: ModelShape) -> dict[str, str]:
        cross = {CROSS_FIELDS[field]: name for field, name in self._SELF.items()}
        return {
            **self._attention(0, "SelfAttention", self._SELF),
            **self._attention(1, "EncDecAttention", cross),
            **self._mlp(2, shape),
        }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        encoder = positive_int(config, "num_layers", where)
        decoder = optional_int(config, "num_decoder_layers", where) or encoder
        gated, act = _feed_forward_proj(config, where)
        adaptations = [Adaptation.IN_SERIES, Adaptation.CAUSAL, Adaptation.RELATIVE_POSITION_BIAS]
        if gated:
            adaptations.append(Adaptation.GATED_MLP)
        return build_shape(
            where,
            num_layers=encoder + decoder,
            encoder_layers=encoder,
            hidden_size=positive_int(config, "d_model", where),
            num_heads=positive_int(config, "num_heads", where),
            head_dim=positive_int(config, "d_kv", where),
            ffn_size=positive_int(config, "d_ff", where),
            mlp=Mlp.GATED if gated else Mlp.PLAIN,
            family=str(config["model_type"]),
            activation=act,
            adaptations=tuple(adaptations),
            initializer_range=initializer_range(config, "initializer_factor"),
        )

    def init_scale(self, field: str, shape: ModelShape) -> float:
        """T5's own scales on ``initializer_factor``: 1/√(N d) for queries, 1/√N for keys, values and the
        MLP's input weights, 1/√(H d) for the attention output, 1/√d_ff for ``wo``."""
        n, inner = shape.hidden_size, shape.num_heads * shape.head_dim
        field = {cross: name for name, cross in CROSS_FIELDS.items()}.get(field, field)
        scales = {
            "query": n * shape.head_dim,
            "key": n,
            "value": n,
            "attn_out": inner,
            "gate": n,
            "ffn_in": n,
            "ffn_out": shape.ffn_size,
        }
        return 1.0 / math.sqrt(scales[field])


def _feed_forward_proj(config: Mapping[str, Any], where: str) -> tuple[bool, str]:
    """(gated, activation) of T5's ``feed_forward_proj``: 'relu', 'gated-gelu' (GELU-tanh, as
    transformers maps it), 'gated-silu', ..."""
    value = config.get("feed_forward_proj", "relu")
    if not isinstance(value, str) or not value or value.count("-") > 1 or value.startswith("-"):
        raise UnsupportedModelError(
            f"{where} gives 'feed_forward_proj' as {described(value)}, not an activation or 'gated-' and an activation"
        )
    gated = value.startswith("gated-")
    name = value.removeprefix("gated-")
    name = "gelu_new" if name == "gelu" else name  # transformers' T5 reads "gated-gelu" as GELU-tanh
    return gated, activation({"act": name}, "act", where, "relu")


class BartAdapter(EncoderDecoderAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("bart", "mbart")
    label = "BART"
    root = "encoder.layers"
    decoder_root = "decoder.layers"
    prefixes: ClassVar[tuple[str, ...]] = ("", "model.")
    _SELF: ClassVar[dict[str, str]] = OPTAdapter.names  # a layer's self-attention and MLP, named as OPT's

    def encoder_names(self, shape: ModelShape) -> dict[str, str]:
        return dict(self._SELF)

    def decoder_names(self, shape: ModelShape) -> dict[str, str]:
        cross = {
            CROSS_FIELDS[field]: self._SELF[field].replace("self_attn.", "encoder_attn.")
            for field in ("query", "key", "value", "attn_out")
        }
        return {**self._SELF, **cross}

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        heads = positive_int(config, "encoder_attention_heads", where)
        decoder_heads = positive_int(config, "decoder_attention_heads", where)
        if heads != decoder_heads:
            raise UnsupportedModelError(
                f"{where} gives the encoder {heads} and the decoder {decoder_heads} attention heads: an "
                f"encoder-decoder is read with one number of heads for both stacks"
            )
        encoder_layers = positive_int(config, "encoder_layers", where)
        return build_shape(
            where,
            num_layers=encoder_layers + positive_int(config, "decoder_layers", where),
            encoder_layers=encoder_layers,
            hidden_size=positive_int(config, "d_model", where),
            num_heads=heads,
            ffn_size=positive_int(config, "encoder_ffn_dim", where),
            decoder_ffn_size=positive_int(config, "decoder_ffn_dim", where),
            family=str(config["model_type"]),
            activation=activation(config, "activation_function", where, "gelu"),
            adaptations=(Adaptation.IN_SERIES, Adaptation.CAUSAL),
            initializer_range=initializer_range(config, "init_std"),
        )
