"""One short Hugging Face ``Trainer`` run with the specbound callback attached, for the family tests.

Four optimiser steps, the proxies logged every two and the model saved at the fourth, so a test can
compare what the callback logged with ``specbound.analyze`` of the saved checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import specbound

STEPS = 4
EVERY = 2


def train_with_callback(model: Any, data: list[dict[str, Any]], out: Path, name: str) -> Any:
    """Train ``model`` on ``data`` for four steps; check the steps the callback logged and its last
    proxy against the saved checkpoint, and return that checkpoint's analysis."""
    import transformers

    from specbound.api.integrations import LOG_PREFIX, SpecboundCallback

    args = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=STEPS,
        per_device_train_batch_size=4,
        logging_steps=EVERY,
        save_steps=STEPS,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    SpecboundCallback.attach(trainer, every_steps=EVERY, name=name)
    trainer.train()
    logged = {e["step"]: e for e in trainer.state.log_history if f"{LOG_PREFIX}ours_log10" in e}
    assert sorted(logged) == [EVERY, STEPS]
    saved = specbound.analyze(out / f"checkpoint-{STEPS}", use_cache=False)
    assert logged[STEPS][f"{LOG_PREFIX}ours_log10"] == pytest.approx(saved.ours_log10, rel=1e-9)
    return saved
