"""Random BERT-family checkpoints rebuilt bit for bit from a numpy seed, for the golden-output tests.

The golden JSON files in ``tests/golden/`` hold what ``specbound analyze --json --p 1`` printed for these
checkpoints (and for the bundled MiniLM) before the family adapters existed; the BERT family's
results must stay exactly those. The weights come from ``numpy.random.default_rng`` (not torch's
generator), written into a transformers model's state dict and saved with ``save_pretrained``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

import numpy as np
from tiny_models import save_model

#: name -> (family, layers, hidden, heads, ffn, safetensors?)
GOLDEN_MODELS: dict[str, tuple[str, int, int, int, int, bool]] = {
    "bert-L3-N48-H6": ("bert", 3, 48, 6, 80, True),
    "roberta-L2-N32-H2": ("roberta", 2, 32, 2, 64, False),
}
GOLDEN_DIR = Path(__file__).parent / "golden"


class EncoderSizes(TypedDict):
    """The keyword arguments of ``transformers.BertConfig`` / ``RobertaConfig`` a golden checkpoint sets."""

    vocab_size: int
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int


def write_golden_checkpoint(name: str, directory: Path) -> Path:
    """Write the checkpoint ``name`` of :data:`GOLDEN_MODELS` into ``directory / name``."""
    import torch
    import transformers

    family, layers, hidden, heads, ffn, safe = GOLDEN_MODELS[name]
    common = EncoderSizes(
        vocab_size=40,
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=24,
    )
    if family == "roberta":
        model: transformers.PreTrainedModel = transformers.RobertaModel(transformers.RobertaConfig(**common))
    else:
        model = transformers.BertModel(transformers.BertConfig(**common))
    rng = np.random.default_rng(sum(map(ord, name)))
    state = model.state_dict()
    for index, key in enumerate(sorted(state)):
        # a scale per tensor, so that spectra differ between layers and p* is not the same everywhere
        scale = 0.02 * float(np.exp(rng.uniform(-1.5, 2.5))) if index % 3 else 0.05
        values = rng.normal(0.0, scale, size=tuple(state[key].shape))
        state[key] = torch.from_numpy(values.astype(np.float32))
    model.load_state_dict(state)
    out = directory / name
    save_model(model, out)
    if not safe:
        (out / "model.safetensors").unlink()
        torch.save(model.state_dict(), out / "pytorch_model.bin")
    return out
