"""The shipped fine-tuning trio (SPEC §14): a base, its full fine-tune and a LoRA adapter, opened offline
by name, the adapter read exactly as peft merges it, and the records the trio was trained to."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runner import run_cli, strict_json

import specbound
from specbound.io import FINETUNE_BASE as BASE_NAME
from specbound.io import FINETUNE_FULL as FULL_NAME
from specbound.io import FINETUNE_LORA as LORA_NAME
from specbound.io import FINETUNE_TRIO_DIR as TRIO_DIR
from specbound.io.models import Source, resolve
from specbound_lab.finetune import LORA_RANK


def test_the_three_open_offline_by_name_from_a_fresh_process() -> None:
    offline = {"HF_HUB_OFFLINE": "1"}
    for name in (BASE_NAME, FULL_NAME, LORA_NAME):
        result = run_cli("analyze", name, "--json", "--no-cache", env=offline)
        assert result.returncode == 0, result.stderr
        data = strict_json(result.stdout)
        assert data["model"] == name and data["family"] == "bert" and data["num_layers"] == 2
    full = strict_json(run_cli("analyze", FULL_NAME, "--base", BASE_NAME, "--json", "--no-cache", env=offline).stdout)
    assert full["reference"]["model"] == BASE_NAME
    lora = strict_json(run_cli("analyze", LORA_NAME, "--json", "--no-cache", env=offline).stdout)
    assert lora["reference"] == {"model": BASE_NAME, "kind": "base", "adaptation": "centred at the base"}


def test_the_names_resolve_to_the_package_and_the_adapter_names_its_base() -> None:
    for name, folder in ((BASE_NAME, "base"), (FULL_NAME, "full"), (LORA_NAME, "lora")):
        ref = resolve(name)
        assert ref.source is Source.BUNDLED and ref.path == TRIO_DIR / folder
    config = json.loads((TRIO_DIR / "lora" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == BASE_NAME and config["r"] == LORA_RANK


def test_the_lora_adapter_changes_what_its_rank_allows() -> None:
    lora = specbound.analyze(LORA_NAME, use_cache=False)
    frame = lora.to_frame()
    mlp = frame[frame["kind"].isin(["M_in", "M_out"])]
    assert (mlp["delta_rank"] == LORA_RANK).all()  # one rank-r update each
    assert (frame[frame["kind"] == "QK"]["delta_rank"] <= 2 * LORA_RANK).all()
    assert (frame[frame["kind"] == "V"]["delta_rank"] <= 2 * LORA_RANK).all()  # ΔW_V and ΔW_O, r each
    assert lora.ours_centred < lora.ours
    full = specbound.analyze(FULL_NAME, base=BASE_NAME, use_cache=False)
    assert full.centred is not None
    assert (full.centred.schatten_profile.rank > 2 * LORA_RANK).all()  # a full fine-tune moves every direction


def test_the_shipped_adapter_reads_as_peft_merges_it() -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")

    base = transformers.BertForSequenceClassification.from_pretrained(TRIO_DIR / "base").to(torch.float64)
    merged = peft.PeftModel.from_pretrained(base, TRIO_DIR / "lora").merge_and_unload()
    reference = transformers.BertForSequenceClassification.from_pretrained(TRIO_DIR / "base").to(torch.float64)
    expected = specbound.analyze(merged, base=reference)
    direct = specbound.analyze(LORA_NAME, use_cache=False)
    assert direct.ours_centred == pytest.approx(expected.ours_centred, rel=1e-10)
    assert direct.centred is not None and expected.centred is not None
    np.testing.assert_array_equal(direct.centred.schatten_profile.rank, expected.centred.schatten_profile.rank)


def test_the_records_say_what_each_model_fitted() -> None:
    records = {r["model"]: r for r in json.loads((TRIO_DIR / "trio.json").read_text())}
    assert set(records) == {BASE_NAME, FULL_NAME, LORA_NAME}
    assert records[BASE_NAME]["test_error"] < 0.05  # the base learned its task
    assert (
        records[FULL_NAME]["test_error"] < 0.1 and records[LORA_NAME]["test_error"] < 0.1
    )  # and both fine-tunes theirs
