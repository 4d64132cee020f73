"""The expert picker: where a page shows one MLP per layer, a mixture of experts shows one expert's.

A dense model has one MLP per layer and gets no picker; a mixture of experts (SPEC §12) gets one
selectbox of its experts (the shared expert last), written into a shared link like every control.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.state import share
from specbound.core.architecture import Expert, ModelShape, expert_label

HELP = (
    "A mixture of experts has one MLP per expert in each layer; this page shows one expert's. Every "
    "expert's matrices enter the total, each with its own term."
)


def expert_picker(shape: ModelShape, key: str, container: Any = st) -> Expert:
    """The expert chosen on this page (routed experts 0..E-1, then ``"shared"``), or None for a dense
    model, which draws nothing."""
    if not shape.moe:
        return None
    labels = [expert_label(expert) for expert in shape.experts]
    codec = share.choice_codec({label: str(expert) for label, expert in zip(labels, shape.experts, strict=True)})
    share.shared_choice(key, codec, labels, labels[0])  # a link made on a model with more experts: the first
    label = container.selectbox("Expert", labels, key=key, help=HELP)
    return shape.experts[labels.index(label)]
