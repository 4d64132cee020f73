"""Class 3, strict output: JSON and CSV are written whole or not at all, and JSON is standard JSON.

Zero matrices give log10 = -inf terms (alpha of the layers below a zero feed-forward matrix); those
are null in JSON, like values that overflow, and nothing reaches stdout before the object is whole.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from cli_runner import assert_one_line_error, cli, strict_json
from tiny_models import MakeCheckpoint

from specbound.present.report import finite_only, to_json_text

ZEROED = {
    "M_in of layer 1": ["encoder.layer.1.intermediate.dense.weight"],
    "M_out of layer 1": ["encoder.layer.1.output.dense.weight"],
    "all of layer 1": [
        f"encoder.layer.1.{k}"
        for k in (
            "attention.self.query.weight",
            "attention.self.key.weight",
            "attention.self.value.weight",
            "attention.output.dense.weight",
            "intermediate.dense.weight",
            "output.dense.weight",
        )
    ],
    "every value matrix": [f"encoder.layer.{i}.attention.self.value.weight" for i in range(3)],
}


def zero_weights(directory: Path, names: list[str]) -> None:
    from safetensors.torch import load_file, save_file

    path = directory / "model.safetensors"
    state = load_file(str(path))
    for name in names:
        state[name].zero_()
    save_file(state, str(path))


@pytest.mark.parametrize("case", list(ZEROED))
def test_zero_matrices_give_strict_json_with_null_log10(make_checkpoint: MakeCheckpoint, case: str) -> None:
    directory = make_checkpoint(layers=3)
    zero_weights(directory, ZEROED[case])
    result = cli("analyze", str(directory), "--json", "--p", "1")
    assert result.returncode == 0 and result.stderr == ""
    out = strict_json(result.stdout)  # parses with NaN and Infinity refused
    assert result.stdout.count("\n") == 1
    assert out["proxies"]["ours"] is not None and math.isfinite(out["proxies"]["ours_log10"])
    if case != "every value matrix":
        assert out["log10_alpha"][0] is None  # alpha of layer 0 holds the zero factor of layer 1: ln 0
        assert out["log10_alpha"][-1] == 0.0


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_of_a_zero_matrix_model_writes_standard_json(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, fmt: str
) -> None:
    directory = make_checkpoint(layers=3)
    zero_weights(directory, ZEROED["M_in of layer 1"])
    out = tmp_path / "results"
    result = cli("export", str(directory), "--format", fmt, "--out", str(out))
    assert result.returncode == 0, result.stderr
    summary = strict_json((out / "summary.json").read_text())
    assert summary["log10_alpha"][0] is None
    for path in out.glob("*.json"):
        text = path.read_text()
        assert "Infinity" not in text and "NaN" not in text
        strict_json(text)
    assert not list(out.glob(".*.tmp"))


def test_nothing_reaches_stdout_when_building_the_object_fails(
    make_checkpoint: MakeCheckpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    import specbound.present.report

    def failing(*args: object, **kwargs: object) -> str:
        raise ValueError("Out of range float values are not JSON compliant: -inf")

    monkeypatch.setattr(specbound.present.report, "to_json_text", failing)
    result = cli("analyze", str(make_checkpoint()), "--json")
    assert result.stdout == ""
    assert result.returncode == 3 and len(result.stderr.splitlines()) == 1


def test_a_failing_export_leaves_earlier_files_whole(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    """summary.json cannot be written (a directory is in its place): the other files are whole and
    no temporary file is left."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "summary.json").mkdir()
    (out / "layers.csv").write_text("old,content\n")
    result = cli("export", str(make_checkpoint()), "--out", str(out))
    assert_one_line_error(result, "cannot write to results")
    assert not list(out.glob(".*.tmp"))
    assert (out / "layers.csv").read_text().startswith("layer,log10_alpha")  # replaced whole, never mixed


@pytest.mark.parametrize(
    "value, expected",
    [
        (float("inf"), None),
        (float("-inf"), None),
        (float("nan"), None),
        (np.float64("-inf"), None),
        (np.float32(2.5), 2.5),
        (np.int64(3), 3),
        ({"a": [1.0, float("nan")]}, {"a": [1.0, None]}),
        ((np.inf, 1), [None, 1]),
        ("NaN", "NaN"),
    ],
)
def test_non_finite_values_become_null(value: object, expected: object) -> None:
    assert finite_only(value) == expected
    strict_json(to_json_text({"v": value}))


def test_grid_outputs_are_complete_and_leave_no_temporary_file(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    models = [str(make_checkpoint(layers=layers, seed=layers, name=f"m{layers}")) for layers in (1, 2)]
    out = tmp_path / "study"
    result = cli("grid", "--models", *models, "--out", str(out), "--atlas", str(tmp_path / "a.npz"))
    assert result.returncode == 0, result.stderr
    assert not list(out.rglob(".*.tmp"))
    for path in [*out.glob("*.csv"), *out.glob("models/*.csv")]:
        assert path.read_text().endswith("\n")
    for path in out.glob("models/*.json"):
        strict_json(path.read_text())
    for path in out.glob("*.html"):
        assert path.read_text().rstrip().endswith("</html>")
