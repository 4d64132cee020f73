"""A peft ``PeftModel`` held in memory (issue 56): read from its adapter's factors, centred at its base.

The models are built with peft's own classes; the references are peft's own ``merge_and_unload`` of
the same model in float64 analysed against the same base, and the same adapter written by peft's
``save_pretrained`` and read from its folder. In float32 (the difference is rank r, not the rounding
of a float32 merge), after ``merge_adapter()`` (the numbers of the model before merging), with
``modules_to_save`` (changed matrices) and with several adapters (the active one, named); several
active ones, one that is not LoRA, or merged weights whose base cannot be recovered are refused in
one line; the model given is unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import save_model

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


def test_a_peft_model_reads_as_its_merged_model_centred_at_its_base(wrapped: Any) -> None:
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
    assert result.centred is not None
    delta = result.centred.schatten_profile
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {4}  # c_fc, r = 4
    assert set(frame.loc[frame.kind == "M_out", "delta_rank"]) == {0}  # c_proj untouched
    assert (delta.rank > 0).sum() == (frame.delta_rank > 0).sum()
    assert result.reference is not None
    assert "LoRA 'default'" in result.model and result.reference.model.endswith("(in memory)")
    assert all(torch.equal(v, before[k]) for k, v in wrapped.state_dict().items())  # left as it was


def test_the_active_adapter_is_the_one_read(wrapped: Any) -> None:
    wrapped.set_adapter("second")
    result = specbound.analyze(wrapped)
    assert "LoRA 'second'" in result.model
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {2}  # the second adapter's r = 2
    merged = copy.deepcopy(wrapped).merge_and_unload(adapter_names=["second"])
    assert result.ours_centred == pytest.approx(specbound.analyze(merged, base=_gpt2()).ours_centred, rel=RTOL)


def test_a_given_base_replaces_its_own_as_the_reference(wrapped: Any) -> None:
    other = _gpt2(seed=9)
    result = specbound.analyze(wrapped, base=other)
    merged = copy.deepcopy(wrapped).merge_and_unload(adapter_names=["default"])
    assert result.ours_centred == pytest.approx(specbound.analyze(merged, base=other).ours_centred, rel=RTOL)


def test_several_active_adapters_or_another_kind_are_refused_in_one_line(wrapped: Any) -> None:
    wrapped.base_model.set_adapter(["default", "second"])
    with pytest.raises(UnsupportedModelError, match=r"2 active adapters .*set_adapter") as caught:
        specbound.analyze(wrapped)
    assert "\n" not in str(caught.value)
    ia3 = peft.get_peft_model(_gpt2(), peft.IA3Config(target_modules=["c_attn"], feedforward_modules=[]))
    with pytest.raises(UnsupportedModelError, match=r"IA3 adapter: specbound reads LoRA adapters only"):
        peft_parts(ia3)


def test_only_peft_models_are_taken_apart(wrapped: Any) -> None:
    assert is_peft_model(wrapped) and not is_peft_model(_gpt2()) and not is_peft_model({})


# --- Read from the adapter's own factors (float32, merged, modules_to_save, several adapters) ---

LLAMA_R = 4
#: Same weights read from memory and from disk: both form W⁰ + scale · B A in float64 from the same
#: stored numbers, so they agree to the last few bits of the float64 sums.
DISK_RTOL = 1e-9
COLUMNS = ("spectral_norm", "frobenius_norm", "contribution", "delta_rank", "delta_spectral_norm", "delta_contribution")


def _llama(dtype: Any = torch.float32, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=100,
    )
    return transformers.LlamaForCausalLM(config).to(dtype)


def _llama_lora(base: Any, seed: int = 1, **fields: Any) -> Any:
    """A LoRA of rank 4 on ``q_proj``, ``v_proj`` and ``down_proj`` (or ``fields``' targets), with
    random factors and every ``modules_to_save`` copy moved off the original."""
    settings = dict(r=LLAMA_R, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    torch.manual_seed(seed)
    model = peft.get_peft_model(copy.deepcopy(base), peft.LoraConfig(**{**settings, **fields}))
    _move_saved_copies(model)
    return model


def _move_saved_copies(model: Any) -> None:
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if ".modules_to_save." in name:
                parameter.add_(0.05 * torch.randn_like(parameter))


def _assert_same_numbers(result: Any, expected: Any, rtol: float) -> None:
    for proxy in ("ours", "edelman", "ours_centred", "edelman_centred"):
        assert getattr(result, proxy) == pytest.approx(getattr(expected, proxy), rel=rtol), proxy
    ours, theirs = result.to_frame(), expected.to_frame()
    for column in COLUMNS:
        np.testing.assert_allclose(ours[column].to_numpy(float), theirs[column].to_numpy(float), rtol=rtol, atol=0)


def _from_disk(model: Any, base: Any, folder: Any, adapter: str = "default") -> Any:
    """The same adapter saved by peft's ``save_pretrained`` and read back from its folder by specbound."""
    save_model(base, folder / "base")
    model.save_pretrained(folder / "lora", selected_adapters=[adapter])
    saved = folder / "lora" if adapter == "default" else folder / "lora" / adapter
    return specbound.analyze(str(saved), base=str(folder / "base"))


def _state(model: Any) -> dict[str, Any]:
    return {key: value.clone() for key, value in model.state_dict().items()}


def _merged_layers(model: Any) -> dict[str, list[str]]:
    return {name: list(m.merged_adapters) for name, m in model.named_modules() if hasattr(m, "merged_adapters")}


def test_a_float32_peft_model_reads_its_factors_as_the_same_adapter_on_disk(tmp_path: Path) -> None:
    base = _llama()
    model = _llama_lora(base)
    result = specbound.analyze(model)
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_out", "delta_rank"]) == {LLAMA_R}  # down_proj: rank r, not rounding noise
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {0}  # up_proj untouched
    _assert_same_numbers(result, _from_disk(model, base, tmp_path), DISK_RTOL)
    exact = copy.deepcopy(model).double().merge_and_unload()  # peft's merge, in float64
    uncentred = specbound.analyze(exact)
    assert result.ours == pytest.approx(uncentred.ours, rel=RTOL)
    assert result.edelman == pytest.approx(uncentred.edelman, rel=RTOL)
    assert result.ours_centred == pytest.approx(specbound.analyze(exact, base=base.double()).ours_centred, rel=RTOL)


@pytest.mark.parametrize(
    ("build", "rtol"),
    [
        # float64: W⁰ comes back to the last bit or two of the subtraction
        (lambda: _llama_lora(_llama(torch.float64)), 1e-12),
        (lambda: peft.get_peft_model(_gpt2(), _lora()), 1e-12),  # Conv1D, fan_in_fan_out
        # float32: the merge itself rounded W⁰ + ΔW to float32; W⁰ is recovered to that rounding
        (lambda: _llama_lora(_llama(torch.float32)), 1e-6),
    ],
    ids=["llama-float64", "gpt2-conv1d-float64", "llama-float32"],
)
def test_after_merge_adapter_the_numbers_are_those_before_merging(build: Callable[[], Any], rtol: float) -> None:
    model = build()
    before = specbound.analyze(model)
    model.merge_adapter()
    weights, merged = _state(model), _merged_layers(model)
    after = specbound.analyze(model)
    _assert_same_numbers(after, before, rtol)
    assert set(after.to_frame().delta_rank) == set(before.to_frame().delta_rank)
    assert _merged_layers(model) == merged and all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())


def test_merged_weights_whose_base_cannot_be_recovered_are_refused_in_one_line() -> None:
    model = _llama_lora(_llama(torch.bfloat16))
    model.merge_adapter()  # bfloat16 keeps 8 bits: W⁰ + ΔW rounded there does not give W⁰ back
    with pytest.raises(UnsupportedModelError, match=r"merged into its bfloat16 weights .* cannot be recovered exactly"):
        specbound.analyze(model)


def test_modules_to_save_count_as_changed_as_on_disk(tmp_path: Path) -> None:
    base = _llama()
    model = _llama_lora(base, target_modules=["q_proj"], modules_to_save=["down_proj"])
    result = specbound.analyze(model)
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_out", "delta_rank"]) == {32}  # the trained copy (32 × 64), full rank
    _assert_same_numbers(result, _from_disk(model, base, tmp_path), DISK_RTOL)


def test_of_two_adapters_the_active_one_is_read(tmp_path: Path) -> None:
    base = _llama()
    model = _llama_lora(base, target_modules=["q_proj", "down_proj"], modules_to_save=["gate_proj"])
    torch.manual_seed(3)
    model.add_adapter("other", peft.LoraConfig(r=2, lora_alpha=4, target_modules=["up_proj"], init_lora_weights=False))
    model.set_adapter("other")
    result = specbound.analyze(model)
    assert "LoRA 'other'" in result.model
    frame = result.to_frame()
    assert set(frame.loc[frame.kind == "M_in", "delta_rank"]) == {2}  # up_proj, the active adapter's r
    assert set(frame.loc[frame.kind.isin(["M_out", "M_gate"]), "delta_rank"]) == {0}  # the other adapter's
    _assert_same_numbers(result, _from_disk(model, base, tmp_path / "other", "other"), DISK_RTOL)
    model.set_adapter("default")
    _assert_same_numbers(specbound.analyze(model), _from_disk(model, base, tmp_path / "default"), DISK_RTOL)


@pytest.mark.parametrize("merge", [False, True], ids=["unmerged", "merged"])
def test_the_model_given_is_left_as_it_was(merge: bool) -> None:
    model = _llama_lora(_llama(), target_modules=["q_proj", "down_proj"], modules_to_save=["gate_proj"])
    model.add_adapter("other", peft.LoraConfig(r=2, target_modules=["up_proj"], init_lora_weights=False))
    if merge:
        model.merge_adapter()
    weights, merged = _state(model), _merged_layers(model)
    dtypes = {k: v.dtype for k, v in model.state_dict().items()}
    specbound.analyze(model)
    assert all(torch.equal(v, weights[k]) and v.dtype == dtypes[k] for k, v in model.state_dict().items())
    assert model.active_adapter == "default" and _merged_layers(model) == merged
    assert any(merged.values()) == merge


def _lora_holders(tmp_path: Any) -> dict[str, tuple[Any, Any]]:
    """What holds LoRA layers without being a PeftModel: (source, config) as given to analyze."""
    base = _llama()
    model = _llama_lora(base)
    model.save_pretrained(tmp_path / "lora")
    attached = copy.deepcopy(base)
    attached.load_adapter(str(tmp_path / "lora"))  # transformers' own PEFT integration
    return {
        "transformers load_adapter": (attached, None),
        "LoraModel": (model.base_model, None),
        "PeftModel state_dict": (model.state_dict(), base.config),
    }


@pytest.mark.parametrize("kind", ["transformers load_adapter", "LoraModel", "PeftModel state_dict"])
def test_lora_layers_outside_a_peft_model_are_refused_in_one_line_that_says_what_to_give(
    kind: str, tmp_path: Path
) -> None:
    source, config = _lora_holders(tmp_path)[kind]
    with pytest.raises(UnsupportedModelError, match=r"holds LoRA layers \('[^']*(base_layer|lora_A)") as caught:
        specbound.analyze(source, config=config)
    message = str(caught.value)
    assert "\n" not in message
    assert all(word in message for word in ("the PeftModel itself", "merge_and_unload()", "save_pretrained"))


@pytest.mark.parametrize("merge", [False, True], ids=["unmerged", "merged"])
@pytest.mark.parametrize(
    ("targets", "lora_bias", "changed_keys"),
    [
        (["c_attn", "c_fc", "wte"], False, ("wte.weight", "ln_f.weight", "c_attn.weight", "c_fc.weight")),
        (["c_attn", "c_fc"], True, ("c_fc.bias", "c_attn.bias", "ln_f.weight", "c_attn.weight")),  # peft: no embedding
    ],
    ids=["embedding", "lora-bias"],
)
def test_every_tensor_equals_peft_merge_in_float64(
    merge: bool, targets: list[str], lora_bias: bool, changed_keys: tuple[str, ...]
) -> None:
    """Tensor by tensor, as peft lays each update out: Conv1D (fan_in_fan_out), an embedding, a
    ``lora_bias`` and ``modules_to_save``: the tuned state dict is peft's ``merge_and_unload`` of a
    float64 copy, the base the original tensors (float32, so any rounding shows as a difference)."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16, tie_word_embeddings=False
    )
    base = transformers.GPT2LMHeadModel(config)
    lora = _lora(target_modules=targets, lora_bias=lora_bias, modules_to_save=["ln_f"])
    torch.manual_seed(1)
    model = peft.get_peft_model(copy.deepcopy(base), lora)
    _move_saved_copies(model)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name and name.endswith("bias"):
                parameter.add_(torch.randn_like(parameter))
    expected = copy.deepcopy(model).double().merge_and_unload().state_dict()
    if merge:
        model.merge_adapter()
    parts = peft_parts(model)
    assert set(parts.tuned) == set(parts.base) == set(expected) == set(base.state_dict())
    for key, tensor in expected.items():
        # merged in float32, W⁰ comes back to the merge's own rounding: one float32 ulp of the merged
        # tensor's largest entry (2^-23 of it); unmerged, W⁰ is the stored tensor itself
        ulp = 2.0**-23 * float(tensor.abs().max()) if merge else 0.0
        torch.testing.assert_close(parts.tuned[key].double(), tensor, rtol=1e-12, atol=ulp + 1e-15)
        torch.testing.assert_close(parts.base[key].double(), base.state_dict()[key].double(), rtol=0, atol=ulp)
    changed = {key for key in expected if not torch.equal(parts.tuned[key].double(), parts.base[key].double())}
    assert all(any(key.endswith(f".{name}") for key in changed) for name in changed_keys)


# --- Inside peft's disable_adapter(): the base, as peft's forward computes it ---


@pytest.mark.parametrize("merge", [False, True], ids=["unmerged", "merged"])
def test_inside_disable_adapter_the_model_reads_as_its_base(merge: bool) -> None:
    """peft's ``disable_adapter()`` context makes every layer compute its base (LoRA factors and
    ``modules_to_save`` copies skipped, a merged layer unmerged): read there, the model's numbers are the
    base's (1e-10), centred at itself every difference has rank 0 and no intruder, and on leaving the
    context the adapter's numbers come back."""
    base = _llama(torch.float64)
    model = _llama_lora(base, target_modules=["q_proj", "down_proj"], modules_to_save=["gate_proj"])
    adapted = specbound.analyze(model)
    if merge:
        model.merge_adapter()
    tokens = torch.arange(12).reshape(2, 6)
    with model.disable_adapter():
        torch.testing.assert_close(model(tokens).logits, base(tokens).logits, rtol=1e-12, atol=1e-12)  # peft's base
        disabled = specbound.analyze(model)
        parts = peft_parts(model)
    plain = specbound.analyze(base)
    assert disabled.ours == pytest.approx(plain.ours, rel=RTOL)
    assert disabled.edelman == pytest.approx(plain.edelman, rel=RTOL)
    scale = plain.profile.spectral_norm.max()
    np.testing.assert_allclose(
        disabled.profile.singular_values, plain.profile.singular_values, rtol=0, atol=RTOL * scale
    )
    frame = disabled.to_frame()
    assert set(frame.delta_rank) == {0} and set(frame.delta_intruders) == {0}  # W = W⁰ everywhere
    assert adapted.to_frame().delta_rank.max() > 0  # whereas the adapter changes q_proj, down_proj, gate_proj
    assert disabled.ours_centred < adapted.ours_centred
    assert "adapters disabled" in disabled.model and "adapters disabled" not in adapted.model
    for key, tensor in base.state_dict().items():  # tensor by tensor: the base itself (recovered when merged)
        torch.testing.assert_close(parts.tuned[key].double(), tensor, rtol=1e-12, atol=1e-15)
    _assert_same_numbers(specbound.analyze(model), adapted, 1e-12)  # enabled again on leaving the context


def test_one_layer_disabled_is_read_as_its_base_the_others_adapted() -> None:
    """peft's forward reads each layer's own flag: a layer whose adapters are disabled computes its base
    while the others stay adapted, and the model is read the same way (not named "adapters disabled")."""
    base = _llama(torch.float64)
    model = _llama_lora(base, target_modules=["q_proj", "down_proj"])
    layer = model.base_model.model.model.layers[0].mlp.down_proj
    layer.enable_adapters(False)
    frame = specbound.analyze(model).to_frame()
    down = frame[frame.kind == "M_out"].sort_values("layer")
    assert list(down.delta_rank) == [0, LLAMA_R]  # layer 0's down_proj disabled, layer 1's adapted
    assert "adapters disabled" not in specbound.analyze(model).model
