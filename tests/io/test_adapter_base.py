"""Where a LoRA adapter's base is found (SPEC §14, issue 56): as a researcher's adapter records it.

peft's ``save_pretrained`` records ``base_model_name_or_path`` as the path it was given, relative to
where training ran (``"models/my-base"`` beside ``models/my-lora``). The adapter must open from any
working directory, in the API and the command line, with the numbers of peft's own merge; a base
given explicitly is the one merged into (also when it is a model in memory); a base found nowhere
gives one line naming the adapter, every place looked at and ``--base``.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import assert_one_line_error, cli, strict_json
from peft_projects import ADAPTER, BASE, llama, make_project
from tiny_models import save_model

import specbound
from specbound.io.loading import ADAPTER_BASE_LEVELS_UP, locate_adapter_base

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

#: Agreement with peft's merged model (SPEC §14).
RTOL = 1e-10


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``models/my-base`` and ``models/my-lora``, the adapter written by peft's own ``save_pretrained``
    from inside the project, so it records the relative path ``models/my-base`` (tests/peft_projects.py)."""
    root = make_project(tmp_path_factory.mktemp("project"))
    recorded = json.loads((root / ADAPTER / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert recorded == BASE == "models/my-base"
    return root


def _peft_merged(adapter: Path, base: Any) -> Any:
    """peft's own merge of ``adapter`` into ``base``, in float64."""
    return peft.PeftModel.from_pretrained(copy.deepcopy(base).to(torch.float64), adapter).merge_and_unload()


def _assert_same(ours: specbound.Analysis, theirs: specbound.Analysis) -> None:
    scale = theirs.profile.spectral_norm.max()
    np.testing.assert_allclose(ours.profile.singular_values, theirs.profile.singular_values, rtol=0, atol=RTOL * scale)
    assert ours.centred is not None and theirs.centred is not None
    d_ours, d_theirs = ours.centred.schatten_profile, theirs.centred.schatten_profile
    np.testing.assert_array_equal(d_ours.rank, d_theirs.rank)
    np.testing.assert_allclose(d_ours.singular_values, d_theirs.singular_values, rtol=0, atol=RTOL * scale)
    assert ours.ours == pytest.approx(theirs.ours, rel=RTOL)
    assert ours.ours_centred == pytest.approx(theirs.ours_centred, rel=RTOL)
    assert (d_ours.rank > 0).any() and (d_ours.rank == 0).any()  # M_in (gate, up) untouched: rank 0


def test_a_relative_base_is_found_from_another_working_directory(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    adapter = project / "models" / "my-lora"
    found = locate_adapter_base(adapter)
    assert found == str((project / "models" / "my-base").resolve())
    result = specbound.analyze(str(adapter), use_cache=False)
    assert result.reference is not None and result.reference.model == found
    base = transformers.LlamaForCausalLM.from_pretrained(project / "models" / "my-base")
    expected = specbound.analyze(_peft_merged(adapter, base), base=base.to(torch.float64))
    _assert_same(result, expected)
    # the command line, run from the same other folder, reads the same numbers
    data = strict_json(cli("analyze", str(adapter), "--json", "--no-cache").stdout)
    assert data["reference"]["model"] == found
    assert data["proxies"]["ours_centred"] == pytest.approx(expected.ours_centred, rel=RTOL)


def test_the_working_directory_is_looked_at_after_the_adapters_folders(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter copied away from its project opens from the project's folder (the working directory)."""
    moved = tmp_path / "far" / "away" / "deep" / "down" / "my-lora"
    moved.parent.mkdir(parents=True)
    moved.mkdir()
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (moved / name).write_bytes((project / "models" / "my-lora" / name).read_bytes())
    monkeypatch.chdir(project)
    assert locate_adapter_base(moved) == str((project / "models" / "my-base").resolve())


def test_a_base_found_nowhere_names_the_adapter_every_place_and_base(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    lone = tmp_path / "lone" / "my-lora"
    lone.mkdir(parents=True)
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        (lone / name).write_bytes((project / "models" / "my-lora" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    line = assert_one_line_error(
        cli("analyze", str(lone)),
        "the base of the adapter my-lora",
        "'models/my-base'",
        str(lone / "models" / "my-base"),  # beside the adapter
        str(lone.parent / "models" / "my-base"),  # the folder above it
        str(tmp_path / "models" / "my-base"),  # the working directory
        "Hugging Face Hub",
        "offline",
        "--base",
    )
    assert line.count("models/my-base") >= ADAPTER_BASE_LEVELS_UP + 2
    with pytest.raises(specbound.SpecboundError, match=r"base= in Python"):
        specbound.analyze(str(lone), use_cache=False)


def test_an_explicit_base_is_the_one_merged_into_and_centred_at(project: Path, tmp_path: Path) -> None:
    """``--base`` / ``base=`` wins over the recorded path: the adapter is merged into THAT base (on disk
    or in memory), which is also the reference; peft's merge into the same base gives the same numbers."""
    adapter = project / "models" / "my-lora"
    other = llama(7)
    save_model(other, tmp_path / "other-base")
    expected = specbound.analyze(_peft_merged(adapter, other), base=other.to(torch.float64))
    in_memory = specbound.analyze(str(adapter), base=other)
    _assert_same(in_memory, expected)
    on_disk = specbound.analyze(str(adapter), base=str(tmp_path / "other-base"), use_cache=False)
    _assert_same(on_disk, expected)
    assert on_disk.reference is not None
    assert on_disk.reference.model == str(tmp_path / "other-base")
    data = strict_json(
        cli("analyze", str(adapter), "--base", str(tmp_path / "other-base"), "--json", "--no-cache").stdout
    )
    assert data["proxies"]["ours_centred"] == pytest.approx(expected.ours_centred, rel=RTOL)
    assert data["proxies"]["ours"] == pytest.approx(expected.ours, rel=RTOL)
    # the recorded base gives other numbers: the explicit one was used, not subtracted after the fact
    recorded = specbound.analyze(str(adapter), use_cache=False)
    assert abs(recorded.ours - expected.ours) > 1e-6 * expected.ours


def test_a_base_recorded_as_a_hub_id_opens_from_the_hub_cache_offline(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Last in the order: the recorded name as a Hub id (``models/my-base`` is one), here from the Hub
    cache with the network off; found nowhere nearer, it is the Hub's copy that is merged into."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = Path(constants.HF_HUB_CACHE) / "models--models--my-base"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    try:
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(project / BASE / name, snapshot / name)
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(commit)
        lone = tmp_path / "lone" / "my-lora"
        shutil.copytree(project / ADAPTER, lone)
        monkeypatch.chdir(tmp_path)
        assert locate_adapter_base(lone) == BASE  # the Hub id, as recorded
        result = specbound.analyze(str(lone), use_cache=False)
        assert result.reference is not None
        assert result.reference.model == BASE
        expected = specbound.analyze(str(project / ADAPTER), use_cache=False)
        assert result.ours_centred == pytest.approx(expected.ours_centred, rel=RTOL)
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def test_an_adapter_folder_that_also_holds_a_config_json_is_named_as_an_adapter(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "with-config"
    shutil.copytree(project / ADAPTER, folder)
    shutil.copy(project / BASE / "config.json", folder / "config.json")
    words = ("with-config", "peft adapter (adapter_config.json)", "config.json", "move the config.json out")
    assert_one_line_error(cli("analyze", str(folder)), *words)
    with pytest.raises(specbound.SpecboundError) as caught:
        specbound.analyze(str(folder), use_cache=False)
    assert all(word in str(caught.value) for word in words)


def test_a_very_long_recorded_base_is_shown_once_and_shortened(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "long-base"
    shutil.copytree(project / ADAPTER, folder)
    config = json.loads((folder / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "models/" + "x" * 5000
    (folder / "adapter_config.json").write_text(json.dumps(config))
    line = assert_one_line_error(cli("analyze", str(folder)), "the base of the adapter long-base", "--base")
    with pytest.raises(specbound.SpecboundError) as caught:
        specbound.analyze(str(folder), use_cache=False)
    for message in (line, str(caught.value)):
        assert message.count("models/xxx") == 1 and "x" * 200 not in message  # once, shortened
        assert len(message) < 600 and "\n" not in message
