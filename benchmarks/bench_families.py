"""The same analysis on three families of one size: BERT-base, GPT-2 small and a Llama-shaped decoder.

Run with ``python benchmarks/bench_families.py`` (part of ``make bench``). It writes three randomly
initialised checkpoints with ``save_pretrained`` (12 layers, N = 768, 12 query heads):

* BERT-base: d_ff = 3072, plain GELU MLP (312 matrices);
* GPT-2 small: fused Conv1D attention, d_ff = 3072 (312 matrices);
* Llama-shaped: 4 key/value heads (grouped-query), a gated SiLU MLP of d_ff = 2048, the same number
  of MLP weights as the others (3 · 768 · 2048 = 2 · 768 · 3072), 324 matrices.

For each it times, in this process, the whole analysis (reading the weights through the family's
adapter and computing every singular value and norm, the median of three runs) and prints it beside
BERT's, as a ratio: the families should analyse in a time of the same order.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

LAYERS, HIDDEN, HEADS = 12, 768, 12
REPEAT = 3


def build(kind: str, directory: Path) -> Path:
    import torch
    import transformers

    torch.manual_seed(0)
    config: transformers.PretrainedConfig
    model: transformers.PreTrainedModel
    if kind == "bert":
        config = transformers.BertConfig(
            vocab_size=128, num_hidden_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
            intermediate_size=4 * HIDDEN, max_position_embeddings=64,
        )  # fmt: skip
        model = transformers.BertModel(config)
    elif kind == "gpt2":
        config = transformers.GPT2Config(vocab_size=128, n_layer=LAYERS, n_embd=HIDDEN, n_head=HEADS, n_positions=64)
        model = transformers.GPT2Model(config)
    else:
        config = transformers.LlamaConfig(
            vocab_size=128, num_hidden_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
            num_key_value_heads=4, intermediate_size=2048, max_position_embeddings=64,
        )  # fmt: skip
        model = transformers.LlamaModel(config)
    out = directory / kind
    model.save_pretrained(out)
    return out


def analyse(directory: Path) -> int:
    from specbound.core.engine import compute_profile
    from specbound.io.checkpoints import open_checkpoint

    checkpoint = open_checkpoint(directory)
    profile = compute_profile(checkpoint.layers(), checkpoint.shape)
    return profile.shape.num_matrices


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        times: dict[str, float] = {}
        for kind in ("bert", "gpt2", "llama"):
            directory = build(kind, Path(tmp))
            runs = []
            for _ in range(REPEAT):
                start = time.perf_counter()
                matrices = analyse(directory)
                runs.append(time.perf_counter() - start)
            times[kind] = statistics.median(runs)
            ratio = times[kind] / times["bert"]
            print(
                f"{kind:<6} {matrices} matrices: {times[kind]:.2f} s (median of {REPEAT}; "
                f"{min(runs):.2f}-{max(runs):.2f}), {ratio:.2f}x BERT-base's time"
            )
    slowest = max(times.values()) / min(times.values())
    print(f"slowest / fastest: {slowest:.2f} (the same order: below 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
