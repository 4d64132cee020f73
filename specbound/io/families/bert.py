"""BERT-family encoders: BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA, MiniLM (``bert``), and DistilBERT.

Every weight is an ``nn.Linear`` (out, in), already the canonical form: the paper's own case, with no
adaptation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ...core.architecture import ModelShape
from .base import LayerLayout, LinearAdapter, linear_specs
from .config import activation, build_shape, initializer_range, positive_int


class BertAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("bert", "roberta", "xlm-roberta", "camembert", "electra")
    label = "BERT"
    root = "encoder.layer"
    prefixes: ClassVar[tuple[str, ...]] = ("", "bert.", "roberta.", "electra.", "camembert.")
    names: ClassVar[dict[str, str]] = {
        "query": "attention.self.query.weight",
        "key": "attention.self.key.weight",
        "value": "attention.self.value.weight",
        "attn_out": "attention.output.dense.weight",
        "ffn_in": "intermediate.dense.weight",
        "ffn_out": "output.dense.weight",
    }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        return build_shape(
            where,
            num_layers=positive_int(config, "num_hidden_layers", where),
            hidden_size=positive_int(config, "hidden_size", where),
            num_heads=positive_int(config, "num_attention_heads", where),
            ffn_size=positive_int(config, "intermediate_size", where),
            family=str(config["model_type"]),
            activation=activation(config, "hidden_act", where, "gelu"),
            initializer_range=initializer_range(config),
        )


class ViTAdapter(BertAdapter):
    """Vision Transformers: BERT's block on image patches (``attention.attention.*``): no adaptation.

    transformers 5 names a ViT's modules in memory ``layers.{i}.attention.q_proj``, ``mlp.fc1``, ...,
    and converts them back to the names above when it saves; both layouts are read.
    """

    in_memory_names: ClassVar[dict[str, str]] = {
        "query": "attention.q_proj.weight",
        "key": "attention.k_proj.weight",
        "value": "attention.v_proj.weight",
        "attn_out": "attention.o_proj.weight",
        "ffn_in": "mlp.fc1.weight",
        "ffn_out": "mlp.fc2.weight",
    }

    model_types: ClassVar[tuple[str, ...]] = ("vit",)
    label = "ViT"
    prefixes: ClassVar[tuple[str, ...]] = ("", "vit.")
    names: ClassVar[dict[str, str]] = {
        **BertAdapter.names,
        "query": "attention.attention.query.weight",
        "key": "attention.attention.key.weight",
        "value": "attention.attention.value.weight",
    }

    def layouts(self, shape: ModelShape) -> tuple[LayerLayout, ...]:
        return (*super().layouts(shape), LayerLayout("layers", linear_specs(self.in_memory_names, shape)))


class DistilBertAdapter(LinearAdapter):
    model_types: ClassVar[tuple[str, ...]] = ("distilbert",)
    label = "DistilBERT"
    root = "transformer.layer"
    prefixes: ClassVar[tuple[str, ...]] = ("", "distilbert.")
    names: ClassVar[dict[str, str]] = {
        "query": "attention.q_lin.weight",
        "key": "attention.k_lin.weight",
        "value": "attention.v_lin.weight",
        "attn_out": "attention.out_lin.weight",
        "ffn_in": "ffn.lin1.weight",
        "ffn_out": "ffn.lin2.weight",
    }

    def shape(self, config: Mapping[str, Any], where: str) -> ModelShape:
        return build_shape(
            where,
            num_layers=positive_int(config, "n_layers", where),
            hidden_size=positive_int(config, "dim", where),
            num_heads=positive_int(config, "n_heads", where),
            ffn_size=positive_int(config, "hidden_dim", where),
            family="distilbert",
            activation=activation(config, "activation", where, "gelu"),
            initializer_range=initializer_range(config),
        )
