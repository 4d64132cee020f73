"""The notebook API: ``specbound.analyze`` on names and on models in memory, and its result.

A model in memory must give exactly what its ``save_pretrained`` directory gives on the command
line; the model must come back unchanged and in the mode it was in; only the layers' tensors are
read (the embeddings never become float64); the README's notebook example runs as it is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import run_main, strict_json
from tiny_models import save_model, tiny_model

import specbound
from specbound.core.architecture import Kind
from specbound.core.bounds import BoundAnalysis, PAssignment

README = Path(__file__).resolve().parents[2] / "README.md"


def _tiny(kind: str) -> Any:
    if kind == "bert":
        return tiny_model(vocab_size=40, max_position_embeddings=512, seed=3)
    if kind == "gpt2":
        return tiny_model("gpt2", head="GPT2LMHeadModel", ffn=None, seed=3)
    return tiny_model("llama", head="LlamaForCausalLM", num_key_value_heads=2, head_dim=12, seed=3)


def _without_name(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "model"}


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_a_model_in_memory_equals_its_saved_directory(kind: str, tmp_path: Path) -> None:
    model = _tiny(kind)
    save_model(model, tmp_path / kind)
    cli = strict_json(run_main("analyze", str(tmp_path / kind), "--json", "--p", "0.5"))
    in_memory = specbound.analyze(model, p=0.5)
    assert _without_name(in_memory.to_dict()) == _without_name(cli)
    assert strict_json(in_memory.to_json())["proxies"] == cli["proxies"]
    by_path = specbound.analyze(tmp_path / kind, p=0.5)
    assert by_path.to_json() + "\n" == run_main("analyze", str(tmp_path / kind), "--json", "--p", "0.5")


def test_a_state_dict_with_its_config_as_object_or_dict() -> None:
    model = _tiny("llama")
    reference = specbound.analyze(model).to_frame()
    for config in (model.config, model.config.to_dict()):
        frame = specbound.analyze(model.state_dict(), config=config).to_frame()
        assert frame.equals(reference)


class _Watched(Mapping[str, Any]):
    """A state dict that records which tensors are read."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state: Mapping[str, Any] = state
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        self.read.add(name)
        return self.state[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.state)

    def __len__(self) -> int:
        return len(self.state)


def test_the_model_is_read_in_place_and_left_as_it_was() -> None:
    import torch

    model = _tiny("gpt2").train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    watched = _Watched(model.state_dict())
    specbound.analyze(watched, config=model.config)
    assert model.training and next(model.parameters()).dtype == torch.float32
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not any("wte" in name or "wpe" in name for name in watched.read)  # embeddings never read
    assert all(".h." in name for name in watched.read)


def test_to_frame_has_one_row_per_matrix_with_the_named_columns(minilm: BoundAnalysis) -> None:
    result = specbound.analyze("minilm-l6", p=1.0)
    frame = result.to_frame()
    assert len(frame) == 6 * (2 * 12 + 2)
    for column in ("layer", "head", "kind", "rank", "spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21"):
        assert column in frame.columns
    for column in ("gamma", "scale", "log10_scale", "p_opt", "contribution_opt", "p", "contribution"):
        assert column in frame.columns
    np.testing.assert_array_equal(frame["p_opt"], minilm.p_opt)
    np.testing.assert_array_equal(frame["contribution_opt"], minilm.optimal.contribution)
    np.testing.assert_array_equal(frame["contribution"], minilm.evaluate(1.0).contribution)
    assert (frame["p"] == 1.0).all()
    assert result.ours == minilm.optimal.total and result.edelman == minilm.edelman
    assert result.at_p == minilm.evaluate(1.0).total and result.at_p_log10 == pytest.approx(12.175692274248924)
    assert len(result.layers_frame()) == 6
    # the checkpoint tensors each row comes from, as the family names them
    row = frame[(frame["layer"] == 3) & (frame["kind"] == "V") & (frame["head"] == 7)].iloc[0]
    assert row["tensors"] == (
        "encoder.layer.3.attention.self.value.weight",
        "encoder.layer.3.attention.output.dense.weight",
    )
    assert frame[frame["kind"] == "M_in"]["tensors"].tolist() == [
        (f"encoder.layer.{layer}.intermediate.dense.weight",) for layer in range(6)
    ]


def test_at_gives_other_indices_from_the_same_spectra(minilm: BoundAnalysis) -> None:
    result = specbound.analyze("minilm-l6")
    assert result.at_p is None and result.at(None).at_p is None
    assignment = PAssignment(default=1.0, by_kind={Kind.QK: 0.0})
    assert result.at(assignment).at_p == minilm.evaluate(assignment).total
    assert result.at(p=2.0).at_p == minilm.evaluate(2.0).total
    with pytest.raises(ValueError):
        result.at(p=2.5)


def test_sources_that_cannot_be_analysed_say_what_is_needed() -> None:
    model = _tiny("bert")
    with pytest.raises(TypeError, match="needs its config"):
        specbound.analyze(model.state_dict())
    with pytest.raises(TypeError, match="cannot analyse a int"):
        specbound.analyze(3)
    with pytest.raises(TypeError, match="brings its own config"):
        specbound.analyze(model, config=model.config)


def test_the_readme_notebook_example_runs_as_written() -> None:
    text = README.read_text()
    section = text[text.index("## From a notebook") :]
    (block,) = re.findall(r"```python\n(.*?)```", section[: section.index("\n## ", 5)], flags=re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["result"].model == "minilm-l6"
    assert namespace["gpt"].family == "gpt2" and namespace["gpt"].at_p is not None


def test_a_state_dict_of_odd_tensors_converts_or_says_why() -> None:
    """Parameters convert, a sparse weight is made dense, a meta tensor is one line (the pickles' rules)."""
    import torch

    from specbound.core.errors import CheckpointError

    model = _tiny("bert")
    state = dict(model.state_dict())
    reference = specbound.analyze(state, config=model.config).to_frame()
    key = "encoder.layer.0.attention.self.query.weight"
    with_parameter = {**state, key: torch.nn.Parameter(state[key].clone())}
    assert specbound.analyze(with_parameter, config=model.config).to_frame().equals(reference)
    sparse = {**state, key: state[key].to_sparse()}
    assert specbound.analyze(sparse, config=model.config).to_frame().equals(reference)
    meta = {**state, key: torch.empty(state[key].shape, device="meta")}
    with pytest.raises(CheckpointError, match="meta tensor"):
        specbound.analyze(meta, config=model.config)


def test_power_law_frame_fits_each_matrix_as_the_json_does(minilm: BoundAnalysis) -> None:
    import json

    from specbound.cli import main
    from specbound.core.heavy_tail import power_law_table

    result = specbound.analyze("minilm-l6")
    laws = result.power_law_frame()
    table = power_law_table(minilm.profile.singular_values, minilm.profile.above_threshold)
    assert list(laws.columns) == [
        "layer",
        "head",
        "kind",
        "rank",
        "alpha",
        "alpha_weighted",
        "xmin",
        "tail",
        "ks_distance",
    ]
    np.testing.assert_array_equal(laws["alpha"], table.alpha)
    assert laws["alpha"].notna().all() and (laws["alpha"] > 1).all()  # every MiniLM matrix has a tail to fit
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["analyze", "minilm-l6", "--json", "--power-law"]) == 0
    report = json.loads(out.getvalue())
    assert [m["alpha"] for m in report["matrices"]] == table.alpha.tolist()
    assert [m["alpha_weighted"] for m in report["matrices"]] == table.alpha_weighted.tolist()
    assert report["power_law"].startswith("WeightWatcher 0.7.7")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["analyze", "minilm-l6", "--json"]) == 0
    plain = json.loads(out.getvalue())
    assert "power_law" not in plain and "alpha" not in plain["matrices"][0]  # only on request
