"""Overhead of the Trainer callback on the lab's 2-layer encoder at the default cadence.

Run with ``python benchmarks/bench_callback.py``. The same Trainer run (the lab's default encoder:
2 layers, width 64, 2 heads; a synthetic two-class task; 500 optimizer steps) is timed without and
with :class:`specbound.api.integrations.SpecboundCallback` at its default cadence (every logging step,
here the Trainer's default of 500, and at each save), alternating, three times each, and the median
overhead is printed against the target of 5 % of the training time.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

STEPS, REPEAT, TARGET = 500, 3, 0.05


def train(directory: Path, *, with_callback: bool) -> float:
    import torch
    import transformers

    from specbound.api.integrations import SpecboundCallback

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=64, num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=256,
        max_position_embeddings=32,  # and two labels, the default
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(config)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 64, (400, 16), generator=generator)
    data = [{"input_ids": i, "labels": int(i[0] % 2)} for i in ids]
    args = transformers.TrainingArguments(
        output_dir=str(directory), max_steps=STEPS, per_device_train_batch_size=32, save_strategy="no",
        report_to=[], use_cpu=True, disable_tqdm=True, seed=0,
    )  # fmt: skip
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    if with_callback:
        SpecboundCallback.attach(trainer)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def main() -> int:
    plain, watched = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(REPEAT):
            plain.append(train(Path(tmp) / f"plain{i}", with_callback=False))
            watched.append(train(Path(tmp) / f"watched{i}", with_callback=True))
    base, with_cb = statistics.median(plain), statistics.median(watched)
    overhead = with_cb / base - 1
    print(f"training {STEPS} steps: {base:.2f} s without the callback, {with_cb:.2f} s with it (medians of {REPEAT})")
    print(f"overhead: {100 * overhead:+.1f} % (target: under {100 * TARGET:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
