"""LoRA adapters read as models (SPEC §14), checked against peft's own ``merge_and_unload()``.

Adapters are made by peft's own classes (``get_peft_model`` with random, non-zero B) and saved with its
``save_pretrained``; the reference is the same adapter merged by peft into the base in float64, saved
as an ordinary checkpoint. The adapter read directly must give the merged model's spectra and the same
centred numbers: GPT-2's fused ``c_attn`` (Conv1D, ``fan_in_fan_out``) with ``rank_pattern``,
``alpha_pattern`` and ``use_rslora``; Llama's seven projections; Phi-3's fused ``qkv_proj`` and
``gate_up_proj``. DoRA, IA³ and prompt tuning are refused by name in one line.
"""

from __future__ import annotations

import json
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import assert_one_line_error, cli, strict_json
from tiny_models import save_model, transformers_model

import specbound
from specbound.io.loading import open_weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

#: Agreement with peft's merged model (SPEC §14: 1e-10 relative).
RTOL = 1e-10

_SMALL = dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, pad_token_id=0)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16),
        dict(
            r=4,
            lora_alpha=8,
            target_modules=["c_attn", "c_fc"],
            fan_in_fan_out=True,
            rank_pattern={"h.1.attn.c_attn": 2},
            alpha_pattern={"c_fc": 16},
            use_rslora=True,
        ),
    ),
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(_SMALL, num_key_value_heads=2, intermediate_size=48),
        dict(
            r=2,
            lora_alpha=4,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            rank_pattern={"layers.0.mlp.down_proj": 5},
        ),
    ),
    "phi3": (
        "Phi3Config",
        "Phi3ForCausalLM",
        dict(_SMALL, num_key_value_heads=2, intermediate_size=48),
        dict(r=3, lora_alpha=6, target_modules=["qkv_proj", "gate_up_proj"]),
    ),
}


def _base(name: str) -> Any:
    config_class, model_class, fields, _ = CASES[name]
    return transformers_model(config_class, model_class, fields)


@pytest.fixture(scope="module")
def adapters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, Path]]:
    """name -> (adapter directory, its base directory, peft's merged model in float64)."""
    root = tmp_path_factory.mktemp("lora")
    made = {}
    for name, (_, model_class, _, lora) in CASES.items():
        base_dir, adapter_dir, merged_dir = root / f"{name}-base", root / f"{name}-adapter", root / f"{name}-merged"
        save_model(_base(name), base_dir)
        torch.manual_seed(1)
        wrapped = peft.get_peft_model(_base(name), peft.LoraConfig(init_lora_weights=False, **lora))
        wrapped.save_pretrained(adapter_dir)
        config = json.loads((adapter_dir / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = str(base_dir)  # where a user's adapter names its base
        (adapter_dir / "adapter_config.json").write_text(json.dumps(config))
        base64 = getattr(transformers, model_class).from_pretrained(base_dir).to(torch.float64)
        merged = peft.PeftModel.from_pretrained(base64, adapter_dir).merge_and_unload()
        save_model(merged, merged_dir)
        made[name] = (adapter_dir, base_dir, merged_dir)
    return made


@pytest.mark.parametrize("name", CASES)
def test_an_adapter_reads_as_peft_merges_it(adapters: dict[str, tuple[Path, Path, Path]], name: str) -> None:
    adapter, base, merged = adapters[name]
    direct = specbound.analyze(str(adapter), use_cache=False)  # its base found through its config
    reference = specbound.analyze(str(merged), base=str(base), use_cache=False)
    assert direct.reference is not None and direct.reference.model == str(base)
    ours, theirs = direct.profile, reference.profile
    scale = theirs.spectral_norm.max()
    np.testing.assert_allclose(ours.singular_values, theirs.singular_values, rtol=0, atol=RTOL * scale)
    assert direct.centred is not None and reference.centred is not None
    d_ours, d_theirs = direct.centred.schatten_profile, reference.centred.schatten_profile
    np.testing.assert_array_equal(d_ours.rank, d_theirs.rank)
    np.testing.assert_allclose(d_ours.singular_values, d_theirs.singular_values, rtol=0, atol=RTOL * scale)
    np.testing.assert_allclose(
        direct.centred.optimal.contribution, reference.centred.optimal.contribution, rtol=RTOL, atol=1e-300
    )
    assert direct.ours_centred == pytest.approx(reference.ours_centred, rel=RTOL)
    assert direct.ours == pytest.approx(reference.ours, rel=RTOL)
    assert (d_ours.rank > 0).any()


def test_the_ranks_are_those_of_the_updates(adapters: dict[str, tuple[Path, Path, Path]]) -> None:
    """A rank-r update of M_in has rank r; of a query or value weight, QK_h and V_h change with rank
    <= 2r and <= r (ΔQK = ΔQ K + Q ΔK + ΔQ ΔK, ΔV = ΔW_V W_O)."""
    analysis = specbound.analyze(str(adapters["gpt2"][0]), use_cache=False)
    frame = analysis.to_frame()
    by: dict[tuple[Any, Any], list[Any]] = {(row.layer, row.kind): [] for row in frame.itertuples()}
    for row in frame.itertuples():
        by[(row.layer, row.kind)].append(row.delta_rank)
    assert by[(0, "M_in")] == [4] and by[(1, "M_in")] == [4]  # c_fc, r = 4
    assert by[(0, "M_out")] == [0] and by[(1, "M_out")] == [0]  # c_proj not targeted: unchanged
    assert all(r == 4 for r in by[(0, "V")]) and all(r == 2 for r in by[(1, "V")])  # rank_pattern: r = 2 in h.1
    assert all(r <= 8 for r in by[(0, "QK")]) and all(r <= 4 for r in by[(1, "QK")])


def test_the_command_line_reads_an_adapter_against_its_base(adapters: dict[str, tuple[Path, Path, Path]]) -> None:
    adapter, base, merged = adapters["llama"]
    data = strict_json(cli("analyze", str(adapter), "--json", "--no-cache").stdout)
    assert data["reference"] == {"model": str(base), "kind": "base", "adaptation": "centred at the base"}
    expected = specbound.analyze(str(merged), base=str(base), use_cache=False)
    assert data["proxies"]["ours_centred"] == pytest.approx(expected.ours_centred, rel=RTOL)
    text = cli("analyze", str(adapter), "--no-cache").stdout
    assert f"centred at the base {base}" in text and "ours_centred" in text
    given = strict_json(cli("analyze", str(adapter), "--base", str(base), "--json", "--no-cache").stdout)
    assert given["proxies"]["ours_centred"] == pytest.approx(data["proxies"]["ours_centred"], rel=1e-15)


def test_an_adapter_is_cached_as_the_pair(adapters: dict[str, tuple[Path, Path, Path]]) -> None:
    adapter = adapters["gpt2"][0]
    first = specbound.analyze(str(adapter))
    again = specbound.analyze(str(adapter))
    np.testing.assert_array_equal(first.profile.singular_values, again.profile.singular_values)
    assert "+" in again.profile.revision  # the adapter's files and the base's


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (lambda: peft.LoraConfig(r=2, target_modules=["q_proj"], use_dora=True), ("DoRA", "use_dora")),
        (lambda: peft.IA3Config(target_modules=["q_proj", "down_proj"], feedforward_modules=["down_proj"]), ("IA3",)),
        (
            lambda: peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4),
            ("PROMPT_TUNING", "LoRA adapters only"),
        ),
    ],
)
def test_other_adapter_kinds_are_refused_by_name(
    adapters: dict[str, tuple[Path, Path, Path]], tmp_path: Path, config: Callable[[], Any], words: tuple[str, ...]
) -> None:
    wrapped = peft.get_peft_model(_base("llama"), config())
    wrapped.save_pretrained(tmp_path / "other")
    assert_one_line_error(cli("analyze", str(tmp_path / "other"), "--base", str(adapters["llama"][1])), *words)


def test_an_adapter_without_a_base_or_on_the_wrong_base_says_so(
    adapters: dict[str, tuple[Path, Path, Path]], tmp_path: Path
) -> None:
    adapter = adapters["gpt2"][0]
    config = json.loads((adapter / "adapter_config.json").read_text())
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "adapter_model.safetensors").write_bytes((adapter / "adapter_model.safetensors").read_bytes())
    (orphan / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": None}))
    assert_one_line_error(cli("analyze", str(orphan)), "does not name its base", "--base")
    assert_one_line_error(cli("analyze", str(adapter), "--base", str(adapters["llama"][1])), "c_attn")


#: Square targets, where no shape tells the layouts apart, with a config whose ``fan_in_fan_out``
#: contradicts the module's type: peft follows the type (BERT's Linear, GPT-2's Conv1D) and so must we.
CONTRARY: dict[str, tuple[str, str, dict[str, Any], str, bool, str]] = {
    "bert-query": (
        "BertConfig",
        "BertModel",
        dict(_SMALL, intermediate_size=48),
        "query",
        True,
        "encoder.layer.0.attention.self.query.weight",
    ),
    "gpt2-c_proj": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16),
        "attn.c_proj",
        False,
        "transformer.h.0.attn.c_proj.weight",
    ),
}


@pytest.mark.parametrize("case", CONTRARY)
def test_the_layout_of_an_update_follows_the_module_type_as_peft_reads_it(tmp_path: Path, case: str) -> None:
    """peft sets ``fan_in_fan_out`` from the base module's type when it loads an adapter (a warning
    says so); read as the config says, the square update would be merged transposed, silently."""
    config_class, model_class, fields, target, written, key = CONTRARY[case]

    def base_model() -> Any:
        return transformers_model(config_class, model_class, fields)

    base_dir, adapter_dir = tmp_path / "base", tmp_path / "adapter"
    save_model(base_model(), base_dir)
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # peft on GPT-2's Conv1D: fan_in_fan_out set for us
        wrapped = peft.get_peft_model(
            base_model(), peft.LoraConfig(r=2, lora_alpha=4, target_modules=[target], init_lora_weights=False)
        )
    wrapped.save_pretrained(adapter_dir)
    config = json.loads((adapter_dir / "adapter_config.json").read_text())
    config.update(fan_in_fan_out=written, base_model_name_or_path=str(base_dir))  # the contrary setting
    (adapter_dir / "adapter_config.json").write_text(json.dumps(config))

    base64 = getattr(transformers, model_class).from_pretrained(base_dir).to(torch.float64)
    with pytest.warns(UserWarning, match="fan_in_fan_out"):  # peft overrides the config, and says so
        merged = peft.PeftModel.from_pretrained(base64, adapter_dir).merge_and_unload()
    theirs = merged.state_dict()[key].numpy()
    update = theirs - getattr(transformers, model_class).from_pretrained(base_dir).state_dict()[key].double().numpy()
    # the update read the other way round would differ by far more than rounding: the test can tell
    assert np.abs(update - update.T).max() > 0.1 * np.abs(update).max()

    ours = open_weights(str(adapter_dir)).reader.get(key)  # the base found through the adapter's config
    assert ours.shape == theirs.shape == (32, 32)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=RTOL * np.abs(theirs).max())


def _merged_by_peft(model_class: str, base_dir: Path, adapter_dir: Path) -> dict[str, np.ndarray]:
    """peft's own reading of the adapter: loaded onto the base in float64 and merged."""
    base64 = getattr(transformers, model_class).from_pretrained(base_dir).to(torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fan_in_fan_out on Conv1D, unexpected adapter keys: peft's own notes
        merged = peft.PeftModel.from_pretrained(base64, adapter_dir).merge_and_unload()
    return {name: tensor.numpy() for name, tensor in merged.state_dict().items()}


def _assert_reads_as_peft(adapter_dir: Path, theirs: dict[str, np.ndarray]) -> int:
    """Every base tensor read through the adapter equals peft's merged one (RTOL of the largest entry);
    the number of tensors compared."""
    reader = open_weights(str(adapter_dir)).reader
    compared = [name for name in reader.names() if name in theirs]
    for name in compared:
        ours = reader.get(name)
        np.testing.assert_allclose(ours, theirs[name], rtol=0, atol=RTOL * max(np.abs(theirs[name]).max(), 1.0))
    return len(compared)


_GPT2 = dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16)


@pytest.fixture(scope="module")
def gpt2_adapter(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """peft's adapter on every linear module of a tiny GPT-2 (c_attn, attn.c_proj, c_fc, mlp.c_proj),
    and the base it names."""
    root = tmp_path_factory.mktemp("targeting")
    torch.manual_seed(0)
    save_model(transformers_model("GPT2Config", "GPT2LMHeadModel", _GPT2, seed=None), root / "base")
    base = transformers.GPT2LMHeadModel.from_pretrained(root / "base")
    torch.manual_seed(1)
    lora = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["c_attn", "c_proj", "c_fc"], init_lora_weights=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fan_in_fan_out set for GPT-2's Conv1D
        peft.get_peft_model(base, lora).save_pretrained(root / "adapter")
    config = json.loads((root / "adapter" / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(root / "base")
    (root / "adapter" / "adapter_config.json").write_text(json.dumps(config))
    return root / "adapter", root / "base"


#: Configs that target fewer modules than the file stores factors for: peft loads those only.
TARGETING: dict[str, dict[str, Any]] = {
    "a list": {"target_modules": ["c_attn"]},
    "a list with a dotted name": {"target_modules": ["mlp.c_proj", "c_attn"]},
    "a regular expression, matched whole": {"target_modules": r".*\.h\.1\.(attn\.c_attn|mlp\.c_fc)"},
    "all-linear": {"target_modules": "All-Linear", "exclude_modules": ["attn.c_proj"]},
    "exclude_modules, a list": {"exclude_modules": ["c_fc"]},
    "exclude_modules, an expression": {"exclude_modules": r".*h\.0\..*"},
    "layers_to_transform": {"layers_to_transform": [0]},
    "layers_to_transform, an int": {"layers_to_transform": 1},
    "layers_pattern": {"layers_to_transform": [1], "layers_pattern": "h"},
    "a name given whole escapes the layers": {
        "target_modules": ["transformer.h.0.attn.c_attn", "c_fc"],
        "layers_to_transform": [1],
    },
}


@pytest.mark.parametrize("case", TARGETING)
def test_only_the_modules_peft_targets_are_merged(gpt2_adapter: tuple[Path, Path], tmp_path: Path, case: str) -> None:
    """peft puts LoRA layers on the modules its config targets and loads no factor of another one: the
    adapter read directly is exactly peft's merged model, though the file stores factors of all 8."""
    adapter, base = gpt2_adapter
    edited = tmp_path / "edited"
    shutil.copytree(adapter, edited)
    config = json.loads((edited / "adapter_config.json").read_text())
    (edited / "adapter_config.json").write_text(json.dumps({**config, **TARGETING[case]}))
    theirs = _merged_by_peft("GPT2LMHeadModel", base, edited)
    everything = _merged_by_peft("GPT2LMHeadModel", base, adapter)
    ignored = [name for name in everything if not np.array_equal(everything[name], theirs[name])]
    assert ignored  # peft ignored some of the stored factors: merging them all would differ
    assert _assert_reads_as_peft(edited, theirs) >= 8


def test_a_saved_module_finds_its_base_weight_under_the_task_models_prefix(tmp_path: Path) -> None:
    """An adapter trained on ``BertForSequenceClassification`` (``bert.encoder.layer...``) over a base
    saved as ``BertModel`` (``encoder.layer...``), saving ``layer.1.output.dense`` whole and, as its task
    type adds, the classifier: the saved dense replaces the base's, as in peft's merged model (it was
    dropped, the centred numbers silently smaller); the new classifier, which the base has not got and
    the analysis never reads, is left out."""
    torch.manual_seed(0)
    fields = dict(_SMALL, intermediate_size=48)
    save_model(transformers_model("BertConfig", "BertModel", fields, seed=None), tmp_path / "base")
    classifier = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "base", num_labels=2)
    torch.manual_seed(1)
    lora = peft.LoraConfig(
        r=2,
        lora_alpha=4,
        target_modules=["query", "value"],
        modules_to_save=["layer.1.output.dense"],
        task_type="SEQ_CLS",
        init_lora_weights=False,
    )
    wrapped = peft.get_peft_model(classifier, lora)
    with torch.no_grad():
        for name, parameter in wrapped.named_parameters():
            if "modules_to_save" in name:
                parameter.add_(0.1 * torch.randn_like(parameter))
    wrapped.save_pretrained(tmp_path / "adapter")
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    (tmp_path / "adapter" / "adapter_config.json").write_text(
        json.dumps({**config, "base_model_name_or_path": str(tmp_path / "base")})
    )

    base64 = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "base", num_labels=2).double()
    merged = peft.PeftModel.from_pretrained(base64, tmp_path / "adapter").merge_and_unload()
    theirs = {name.removeprefix("bert."): tensor.numpy() for name, tensor in merged.state_dict().items()}
    dense = "encoder.layer.1.output.dense.weight"
    w0 = transformers.BertModel.from_pretrained(tmp_path / "base").state_dict()[dense].double().numpy()
    assert np.abs(theirs[dense] - w0).max() > 0.01  # peft loaded the saved dense
    assert _assert_reads_as_peft(tmp_path / "adapter", theirs) >= 12
    direct = specbound.analyze(str(tmp_path / "adapter"), use_cache=False)
    frame = direct.to_frame()
    assert frame[(frame.layer == 1) & (frame.kind == "M_out")].delta_rank.tolist() == [32]


def _weight_by_scanning(module: str, names: set[str]) -> str | None:
    """The rule of :class:`BaseNames`, written as its definition (a scan of every name at every split
    point: quadratic, the reference only)."""
    parts = module.split(".")
    for start in range(len(parts)):
        candidate = ".".join(parts[start:]) + ".weight"
        if candidate in names:
            return candidate
        prefixed = [name for name in names if name.endswith("." + candidate)]
        if len(prefixed) == 1:
            return prefixed[0]
    return None


def test_the_suffix_index_finds_what_the_rule_defines() -> None:
    """On random names over a few parts (prefixes either way, ambiguous suffixes, repeated parts), the
    index answers as a scan of every name would."""
    from specbound.io.checkpoints.lora import BaseNames

    rng = np.random.default_rng(0)
    vocabulary = ["bert", "encoder", "layer", "0", "1", "dense", "output", "a", ""]
    for _ in range(200):
        names = {
            ".".join(rng.choice(vocabulary, size=rng.integers(1, 6))) + ".weight" for _ in range(rng.integers(1, 12))
        }
        index = BaseNames(sorted(names))
        for _ in range(20):
            module = ".".join(rng.choice(vocabulary, size=rng.integers(1, 7)))
            assert index.weight_of(module) == _weight_by_scanning(module, names), (module, names)


def test_the_targeting_decides_as_peft_decides_on_random_names_and_configs() -> None:
    """:class:`Targeting` against peft's own ``check_target_module_exists`` on random module names and
    configs (lists, expressions, exclusions, saved modules, layer indexes and patterns)."""
    from peft.tuners.tuners_utils import check_target_module_exists

    from specbound.io.checkpoints.lora import Targeting

    rng = np.random.default_rng(1)
    parts = ["model", "transformer", "h", "layers", "0", "1", "12", "attn", "c_attn", "mlp", "c_fc", "q_proj"]

    def some(size: int) -> list[str]:
        return [".".join(rng.choice(parts, size=rng.integers(1, 3))) for _ in range(size)]

    choices: dict[str, list[Any]] = {
        "target_modules": [some(1), some(3), r".*\.(c_attn|q_proj)", r"model\..*", ".*attn.*"],
        "exclude_modules": [None, some(1), r".*\.1\..*"],
        "modules_to_save": [None, some(1)],
        "layers_to_transform": [None, [0], [1, 12], 1, []],
        "layers_pattern": [None, "h", ["layers", "h"], "model.layers"],
    }
    compared, adapted = 0, 0
    for _ in range(300):
        fields = {name: values[rng.integers(len(values))] for name, values in choices.items()}
        try:
            config = peft.LoraConfig(**fields)
        except ValueError:
            continue  # a config peft refuses: its refusals have their own tests
        targeting = Targeting.of(fields)
        for _ in range(20):
            key = ".".join(rng.choice(parts, size=rng.integers(1, 7)))
            assert targeting.adapts(key) == bool(check_target_module_exists(config, key)), (fields, key)
            compared, adapted = compared + 1, adapted + targeting.adapts(key)
    assert compared > 2000 and adapted > 50  # both answers, many times
