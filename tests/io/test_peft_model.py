"""A peft ``PeftModel`` held in memory (issue 56): read as its merged model, centred at its base.

The model is built with peft's own classes; the reference is peft's own ``merge_and_unload`` of the
same model (in float64) analysed against the same base. Several adapters: the active one, named;
several active ones, or one that is not LoRA, are refused in one line; the model given is unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

import specbound
from specbound.core.errors import UnsupportedModelError
from specbound.io.checkpoints.peft_model import is_peft_model, peft_parts

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

RTOL = 1e-10


def _gpt2(seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16)
    return transformers.GPT2LMHeadModel(config).to(torch.float64)


def _lora(**fields: Any) -> Any:
    settings = dict(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True, init_lora_weights=False)
    return peft.LoraConfig(**{**settings, **fields})


@pytest.fixture
def wrapped() -> Any:
    """GPT-2 (fused c_attn, Conv1D) with two LoRA adapters, 'default' (rsLoRA) active and 'second'."""
    torch.manual_seed(1)
    model = peft.get_peft_model(_gpt2(), _lora(use_rslora=True))
    torch.manual_seed(2)
    model.add_adapter("second", _lora(r=2, lora_alpha=16))
    return model


def test_a_peft_model_reads_as_its_merged_model_centred_at_its_base(wrapped):
    before = {k: v.clone() for k, v in wrapped.state_dict().items()}
    result = specbound.analyze(wrapped)
    merged = copy.deepcopy(wrapped).merge_and_unload(adapter_names=["default"])
    expected = specbound.analyze(merged, base=_gpt2())
    scale = expected.profile.spectral_norm.max()
    np.testing.assert_allclose(
        result.profile.singular_values, expected.profile.singular_values, rtol=0, atol=RTOL * scale
    )
    assert result.ours == pytest.approx(expected.ours, rel=RTOL)
    assert result.edelman == pytest.approx(expected.edelman, rel=RTOL)
    assert result.ours_centred == pytest.approx(expected.ours_centred, rel=RTOL)
    delta = result.centred.schatten_profile
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {4}  # c_fc, r = 4
    assert set(frame.loc[frame.kind == "M_out", "delta_rank"]) == {0}  # c_proj untouched
    assert (delta.rank > 0).sum() == (frame.delta_rank > 0).sum()
    assert "LoRA 'default'" in result.model and result.reference.model.endswith("(in memory)")
    assert all(torch.equal(v, before[k]) for k, v in wrapped.state_dict().items())  # left as it was


def test_the_active_adapter_is_the_one_read(wrapped):
    wrapped.set_adapter("second")
    result = specbound.analyze(wrapped)
    assert "LoRA 'second'" in result.model
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {2}  # the second adapter's r = 2
    merged = copy.deepcopy(wrapped).merge_and_unload(adapter_names=["second"])
    assert result.ours_centred == pytest.approx(specbound.analyze(merged, base=_gpt2()).ours_centred, rel=RTOL)


def test_a_given_base_replaces_its_own_as_the_reference(wrapped):
    other = _gpt2(seed=9)
    result = specbound.analyze(wrapped, base=other)
    merged = copy.deepcopy(wrapped).merge_and_unload(adapter_names=["default"])
    assert result.ours_centred == pytest.approx(specbound.analyze(merged, base=other).ours_centred, rel=RTOL)


def test_several_active_adapters_or_another_kind_are_refused_in_one_line(wrapped):
    wrapped.base_model.set_adapter(["default", "second"])
    with pytest.raises(UnsupportedModelError, match=r"2 active adapters .*set_adapter") as caught:
        specbound.analyze(wrapped)
    assert "\n" not in str(caught.value)
    ia3 = peft.get_peft_model(_gpt2(), peft.IA3Config(target_modules=["c_attn"], feedforward_modules=[]))
    with pytest.raises(UnsupportedModelError, match=r"IA3 adapter: specbound reads LoRA adapters only"):
        peft_parts(ia3)


def test_only_peft_models_are_taken_apart(wrapped):
    assert is_peft_model(wrapped) and not is_peft_model(_gpt2()) and not is_peft_model({})
