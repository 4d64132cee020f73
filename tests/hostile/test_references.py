"""Hostile references (issue 59): a reference given empty, or holding a NaN, is one line and only one.

``--base ""`` (an unset shell variable) must not drop the reading asked for and exit 0; a bf16
fine-tune against a base holding a NaN is refused for the NaN alone, without the rounding warning
first (that warning is about a difference, and there is none).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import assert_one_line_error, cli
from peft_projects import LLAMA
from tiny_models import save_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def llamas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A float32 base, the same with one NaN, and a bf16 copy of the base."""
    root = tmp_path_factory.mktemp("references")
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA))
    save_model(model, root / "base")
    save_model(model, root / "bf16", dtype="bfloat16")
    model = model.to(torch.float32)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[3, 5] = float("nan")
    save_model(model, root / "nan-base")
    return {path.name: path for path in root.iterdir()}


@pytest.mark.parametrize("flag", ["--base"])
@pytest.mark.parametrize("given", ["", "   "])
def test_an_empty_reference_is_refused_not_dropped(llamas: dict[str, Path], flag: str, given: str) -> None:
    line = assert_one_line_error(cli("analyze", str(llamas["base"]), flag, given, "--no-cache"), flag, status=2)
    assert "empty" in line


def test_an_empty_trajectory_reference_is_refused_the_same_way(llamas: dict[str, Path], tmp_path: Path) -> None:
    line = assert_one_line_error(
        cli("trajectory", str(llamas["base"]), "--out", str(tmp_path / "out"), "--reference", ""), status=2
    )
    assert "--reference" in line and "empty" in line
    assert not (tmp_path / "out").exists()


def test_a_bf16_fine_tune_against_a_base_with_a_nan_is_one_line(llamas: dict[str, Path]) -> None:
    line = assert_one_line_error(cli("analyze", str(llamas["bf16"]), "--base", str(llamas["nan-base"]), "--no-cache"))
    assert "NaN" in line or "nan" in line.lower()
    assert "rounding" not in line
