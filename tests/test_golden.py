"""The BERT family's results stay bit for bit what they were before other families were read.

``tests/golden/*.json`` hold ``specbound analyze --json --p 1`` as printed before the family adapters
existed, for the bundled MiniLM and two random checkpoints rebuilt from a numpy seed
(:mod:`golden_models`). Every field of those files must come back identical (``==`` on floats);
fields added since (the family, the adaptations, ...) are checked to say "a BERT, no adaptation".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import run_main, strict_json
from golden_models import GOLDEN_DIR, GOLDEN_MODELS, write_golden_checkpoint


def _same_fields(golden: object, now: object, where: str = "") -> None:
    if isinstance(golden, dict):
        assert isinstance(now, dict), where
        for key, value in golden.items():
            assert key in now, f"{where}.{key} is gone"
            _same_fields(value, now[key], f"{where}.{key}")
    elif isinstance(golden, list):
        assert isinstance(now, list) and len(now) == len(golden), where
        for i, (a, b) in enumerate(zip(golden, now, strict=True)):
            _same_fields(a, b, f"{where}[{i}]")
    else:
        assert now == golden, f"{where}: {now!r} != {golden!r}"


@pytest.mark.parametrize("name", [*GOLDEN_MODELS, "minilm-l6"])
def test_bert_family_results_are_unchanged_bit_for_bit(name: str, tmp_path: Path) -> None:
    source = str(write_golden_checkpoint(name, tmp_path)) if name in GOLDEN_MODELS else name
    now = strict_json(run_main("analyze", source, "--json", "--p", "1"))
    golden = json.loads((GOLDEN_DIR / f"{name}.json").read_text())
    golden.pop("model")
    _same_fields(golden, now)
    family = "roberta" if name.startswith("roberta") else "bert"
    assert (now["family"], now["adaptations"], now["mlp"], now["residual"]) == (family, [], "plain", "sequential")
    assert now["num_kv_heads"] == now["num_heads"]
