"""A small pretrained base, a full fine-tune of it and a LoRA adapter of it (SPEC §14), shipped so that
"what did fine-tuning change?" can be asked offline, out of the box.

The base is a 2-layer BERT classifier of width 64 (2 heads) trained by the lab on the threshold task
(:class:`~specbound_lab.tasks.ThresholdTask`: y = [sum of the tokens at positions 0, 5, 9 >= t]). The
fine-tuning task is the same rule read at other positions (2, 7, 12): the same vocabulary and length,
so the base's embeddings carry over, and a different function, so the attention must move. From the
base the lab trains, on the fine-tuning task,

* a **full fine-tune**: every weight trained (AdamW, learning rate 5e-4);
* a **LoRA adapter**: peft's own ``LoraConfig`` (rank 4, lora_alpha 8) on the query, key, value,
  attention-output and both feed-forward weights, the classifier trained in full (``modules_to_save``),
  the rest frozen; saved by peft with ``base_model_name_or_path`` = :data:`BASE_NAME`, the catalog name
  that resolves to the shipped base anywhere.

All three are written by transformers' and peft's own ``save_pretrained`` in float32; ``make
lab-finetune`` (or :func:`make_trio`) regenerates them. peft is needed only to regenerate the adapter,
not to read it. The names :data:`BASE_NAME`, :data:`FULL_NAME` and :data:`LORA_NAME` open them
anywhere a model name is taken (CLI, notebook, dashboard).

Example:
    >>> from specbound.io import resolve
    >>> resolve(LORA_NAME).path.name
    'lora'
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specbound.io import FINETUNE_BASE as BASE_NAME
from specbound.io import FINETUNE_FULL as FULL_NAME
from specbound.io import FINETUNE_LORA as LORA_NAME
from specbound.io import FINETUNE_TRIO_DIR as TRIO_DIR

from .tasks import ThresholdTask
from .train import LabError, RunSpec, _measure, _training_context, build_model, model_class_name, model_inputs
from .tuning import LORA_TARGETS

#: The pretraining and fine-tuning tasks: one rule at two sets of positions.
BASE_TASK = ThresholdTask(positions=(0, 5, 9))
FINE_TUNE_TASK = ThresholdTask(positions=(2, 7, 12))
#: The base's architecture and pretraining (a lab run; the optimiser's settings are the sweeps').
BASE_SPEC = RunSpec(layers=2, hidden=64, heads=2, n_train=1600, seed=0, task=BASE_TASK)
BASE_STEPS, FINE_TUNE_STEPS, FINE_TUNE_N = 1500, 800, 400
FINE_TUNE_RATE = 5e-4
LORA_RANK, LORA_ALPHA = 4, 8


@dataclass(frozen=True)
class TrioRecord:
    """What each model of the trio reached: training and test error on its own task."""

    model: str
    task: str
    train_error: float
    test_error: float
    seconds: float


def _train(model: Any, task: ThresholdTask, n_train: int, steps: int, rate: float, seed: int) -> TrioRecord:
    """Train ``model`` (its trainable parameters) on ``task`` with AdamW on minibatches of 64, then
    measure its training and test error on 4,000 fresh samples."""
    import torch

    started = time.perf_counter()
    train, test = task.datasets(n_train, 4000, seed)
    ids, labels = model_inputs(train, task.vocab_size)
    test_ids, test_labels = model_inputs(test, task.vocab_size)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=rate, weight_decay=0.01)
    batches = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        rows = torch.randint(0, n_train, (64,), generator=batches)
        loss = model(input_ids=ids[rows], labels=labels[rows]).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    _, train_error = _measure(model, ids, labels)
    _, test_error = _measure(model, test_ids, test_labels)
    model.eval()
    return TrioRecord("", str(task.positions), train_error, test_error, time.perf_counter() - started)


def make_trio(out: Path = TRIO_DIR) -> list[TrioRecord]:
    """Train the base, its full fine-tune and its LoRA adapter and write them under ``out`` (``base/``,
    ``full/``, ``lora/`` and ``trio.json``, the records). Needs peft for the adapter."""
    try:
        import peft
    except ImportError:
        raise LabError("regenerating the fine-tuning trio needs peft (pip install peft)") from None
    import torch

    records = []
    with _training_context(1):
        torch.manual_seed(BASE_SPEC.seed)
        base = build_model(BASE_SPEC)
        records.append(_named(_train(base, BASE_TASK, BASE_SPEC.n_train, BASE_STEPS, 1e-3, 0), BASE_NAME))
        base.save_pretrained(out / "base")
        full = build_model(BASE_SPEC)
        full.load_state_dict(base.state_dict())
        records.append(_named(_train(full, FINE_TUNE_TASK, FINE_TUNE_N, FINE_TUNE_STEPS, FINE_TUNE_RATE, 1), FULL_NAME))
        full.save_pretrained(out / "full")
        frozen = build_model(BASE_SPEC)
        frozen.load_state_dict(base.state_dict())
        torch.manual_seed(2)
        config = peft.LoraConfig(
            r=LORA_RANK,
            lora_alpha=LORA_ALPHA,
            target_modules=list(LORA_TARGETS),
            modules_to_save=["classifier"],
        )
        adapted = peft.get_peft_model(frozen, config)
        record = _train(adapted, FINE_TUNE_TASK, FINE_TUNE_N, FINE_TUNE_STEPS, FINE_TUNE_RATE, 1)
        records.append(_named(record, LORA_NAME))
        adapted.save_pretrained(str(out / "lora"))
    _name_base(out / "lora" / "adapter_config.json")
    (out / "lora" / "README.md").unlink(missing_ok=True)  # peft's blank model card
    (out / "trio.json").write_text(json.dumps([r.__dict__ for r in records], indent=1) + "\n")
    return records


#: Fresh samples of the base's task on which a fine-tune's forgetting is measured.
FORGETTING_SAMPLES = 2000


def base_task_error(directory: Path, spec: RunSpec) -> float:
    """Forgetting: the error of the checkpoint in ``directory`` on the task its fine-tuning run's base
    was trained on, on :data:`FORGETTING_SAMPLES` fresh samples drawn with the run's seed. Known for a
    fine-tune of the lab's shipped base (:data:`BASE_NAME`, trained on :data:`BASE_TASK`); NaN for a
    run trained from scratch or from another base, whose own task the lab does not know.

    Its rise from the run's first checkpoint (the base itself: its own test error) to the last is how
    much of the base's task the fine-tune forgot (Shuttleworth et al. 2025 tie it to intruder
    dimensions, SPEC §14b).
    """
    if spec.fine_tuning is None or spec.fine_tuning.base != BASE_NAME or spec.task.causal:
        return math.nan
    import transformers

    _, test = BASE_TASK.datasets(1, FORGETTING_SAMPLES, spec.seed)
    ids, labels = model_inputs(test, BASE_TASK.vocab_size, spec.family)
    with _training_context(spec.settings.threads):
        model = getattr(transformers, model_class_name(spec)).from_pretrained(directory)
        _, error = _measure(model, ids, labels)
    return float(error)


def _named(record: TrioRecord, name: str) -> TrioRecord:
    return TrioRecord(name, record.task, record.train_error, record.test_error, record.seconds)


def _name_base(config_file: Path) -> None:
    """Point the adapter at the shipped base by its catalog name (peft wrote a name of the model in memory)."""
    config = json.loads(config_file.read_text())
    config["base_model_name_or_path"] = BASE_NAME
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def main() -> None:
    """``python -m specbound_lab.finetune``: regenerate the shipped trio and print its records."""
    for record in make_trio():
        print(
            f"{record.model:<14} task positions {record.task}: train error {record.train_error:.4f}, "
            f"test error {record.test_error:.4f} ({record.seconds:.0f} s)"
        )


if __name__ == "__main__":
    main()
