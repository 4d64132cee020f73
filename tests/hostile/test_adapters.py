"""Hostile LoRA adapter configs (issue 59): every value is what it says, every pattern runs in
bounded time, and factors the config does not describe are refused as peft refuses them.

The adapter is peft's own (``get_peft_model`` on a tiny BERT, saved with ``save_pretrained``); each
case edits one field of its ``adapter_config.json``, as someone handing it over might.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import assert_one_line_error, cli
from tiny_models import save_model, transformers_model

import specbound
from specbound.core import patterns

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

_FIELDS = dict(
    vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48, pad_token_id=0
)
#: The 17-character key of issue 59 (Python's re backtracks for minutes on a 41-character name).
EVIL = r"([\w.]|[\w.])*X"


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """peft's adapter on ``query`` and ``intermediate.dense`` of a tiny BERT whose folder it names."""
    root = tmp_path_factory.mktemp("adapters")
    torch.manual_seed(0)
    save_model(transformers_model("BertConfig", "BertModel", _FIELDS, seed=None), root / "base")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**_FIELDS))
    config = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["query", "intermediate.dense"], init_lora_weights=False)
    peft.get_peft_model(model, config).save_pretrained(root / "adapter")
    _edit(root / "adapter", base_model_name_or_path=str(root / "base"))
    return root / "adapter"


def _edit(directory: Path, **fields: Any) -> Path:
    path = directory / "adapter_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))
    return directory


def _copy(adapter: Path, tmp_path: Path, **fields: Any) -> Path:
    copy = tmp_path / "handed-over"
    shutil.copytree(adapter, copy)
    return _edit(copy, **fields)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"use_rslora": "false"}, ("use_rslora must be true or false", "the string 'false'")),
        ({"fan_in_fan_out": "true"}, ("fan_in_fan_out must be true or false",)),
        ({"use_dora": "false"}, ("use_dora must be true or false",)),  # not read as DoRA
        ({"use_rslora": 0}, ("use_rslora must be true or false",)),
        ({"alpha_pattern": {"query": True}}, ("alpha_pattern's query is true, not a number",)),
        ({"alpha_pattern": {"query": "8"}}, ("alpha_pattern's query is the string '8'",)),
        ({"rank_pattern": {"query": 2.5}}, ("rank_pattern's query is 2.5, not a positive integer",)),
        ({"rank_pattern": {"query": True}}, ("rank_pattern's query is true",)),
        ({"r": True}, ("r must be a positive integer, got true",)),
        ({"r": 0}, ("r must be a positive integer, got 0",)),
        ({"lora_alpha": True}, ("lora_alpha must be a number, got true",)),
    ],
)
def test_a_config_value_of_the_wrong_type_is_refused_not_read_as_something_else(
    adapter: Path, tmp_path: Path, fields: dict[str, Any], words: tuple[str, ...]
) -> None:
    """``"false"`` is a true value in Python and ``true`` the number 1: read so, the update doubles
    (``use_rslora``) or takes α = 1, and nothing says so."""
    handed = _copy(adapter, tmp_path, **fields)
    assert_one_line_error(cli("analyze", str(handed), "--no-cache"), "adapter_config.json", *words)


def test_a_whole_number_beyond_64_bits_is_a_number_as_peft_reads_it(adapter: Path, tmp_path: Path) -> None:
    """JSON's integers have no size and peft takes ``lora_alpha: 100000000000000000000`` as the number it
    is: so does specbound (an update 5e19 times B A), with no TypeError from numpy; one beyond float64's
    range is refused with the line of any other value that is not a number."""
    big = _copy(adapter, tmp_path / "big", lora_alpha=10**20, alpha_pattern={"query": 10**20})
    result = cli("analyze", str(big), "--no-cache", "--json")
    assert result.returncode == 0, result.stderr
    assert np.isfinite(json.loads(result.stdout)["proxies"]["ours_centred_log10"])
    huge = _copy(adapter, tmp_path / "huge", lora_alpha=10**400)
    assert_one_line_error(cli("analyze", str(huge), "--no-cache"), "lora_alpha must be a number, got 1000")
    in_pattern = _copy(adapter, tmp_path / "pattern", alpha_pattern={"query": 10**400})
    assert_one_line_error(cli("analyze", str(in_pattern), "--no-cache"), "alpha_pattern's query is 1000")


def test_the_key_that_hangs_re_never_reaches_it_and_the_adapter_reads_as_without_it(
    adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What runs: the key is matched by the automaton, never by Python's backtracking engine (which
    takes minutes on it); it matches no module, so the adapter reads exactly as without the key."""
    real = {name: getattr(re, name) for name in ("match", "fullmatch", "search", "compile")}

    def guarded(name: str) -> Callable[..., Any]:
        def call(pattern: object, *args: Any, **kwargs: Any) -> Any:
            assert EVIL not in str(pattern), f"the adapter's key reached re.{name}"
            return real[name](pattern, *args, **kwargs)

        return call

    for name in real:
        monkeypatch.setattr(re, name, guarded(name))
    handed = _copy(adapter, tmp_path, alpha_pattern={EVIL: 3}, rank_pattern={EVIL: 7})
    hostile = specbound.analyze(str(handed), use_cache=False)
    plain = specbound.analyze(str(adapter), use_cache=False)
    np.testing.assert_array_equal(hostile.profile.singular_values, plain.profile.singular_values)
    assert hostile.ours_centred == pytest.approx(plain.ours_centred, rel=1e-15)
    assert patterns.SuffixPattern(EVIL).states < 20  # each of the name's steps visits fewer states than this


@pytest.mark.parametrize(
    ("key", "words"),
    [
        (r"(a{100}){200}", "more than 10000 automaton states"),
        (r"(?=query)query", "a lookaround"),
        (r"(query)\1", "a backreference"),
        (r"query(", "is not a valid regular expression"),
    ],
)
def test_a_pattern_no_bounded_matcher_runs_is_refused_in_one_line(
    adapter: Path, tmp_path: Path, key: str, words: str
) -> None:
    handed = _copy(adapter, tmp_path, alpha_pattern={key: 3})
    assert_one_line_error(cli("analyze", str(handed), "--no-cache"), "alpha_pattern key", words)


def test_a_matching_regular_pattern_gives_its_alpha_as_peft_does(adapter: Path, tmp_path: Path) -> None:
    """A key with metacharacters that matches layer 1's query only: its update is scaled by 12 / 2
    instead of 4 / 2, the centred distance of that layer alone changes, by exactly that factor."""
    handed = _copy(adapter, tmp_path, alpha_pattern={r"layer\.1\.attention\.self\.q\w+": 12})
    base = str(json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"])
    from specbound.io.loading import open_weights

    key = "encoder.layer.{}.attention.self.query.weight"
    plain, scaled, w0 = open_weights(str(adapter)).reader, open_weights(str(handed)).reader, open_weights(base).reader
    np.testing.assert_allclose(
        scaled.get(key.format(1)) - w0.get(key.format(1)),
        3 * (plain.get(key.format(1)) - w0.get(key.format(1))),
        rtol=1e-12,
        atol=0,
    )
    np.testing.assert_array_equal(scaled.get(key.format(0)), plain.get(key.format(0)))


def test_factors_of_another_rank_than_the_config_gives_are_refused_as_peft_refuses_them(
    adapter: Path, tmp_path: Path
) -> None:
    """peft builds r x in factors from the config and refuses to load others; read at the stored rank,
    the scale α / r would be the wrong one."""
    handed = _copy(adapter, tmp_path, r=4)
    with pytest.raises(RuntimeError, match="size mismatch"):
        base = transformers.BertModel.from_pretrained(
            json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
        )
        peft.PeftModel.from_pretrained(base, handed)
    line = assert_one_line_error(cli("analyze", str(handed), "--no-cache"), "at rank 2", "rank 4", "peft")
    assert "encoder.layer.0.attention.self.query" in line
    by_pattern = _copy(adapter, tmp_path / "p", rank_pattern={"intermediate.dense": 3})
    assert_one_line_error(cli("analyze", str(by_pattern), "--no-cache"), "intermediate.dense", "rank 3")


def test_the_steps_of_matching_are_bounded_before_any_is_run(
    adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What runs is bounded before it runs: the steps every key may take on every module are summed
    first, and above the limit the adapter is refused in one line. Here 50 plain keys of one segment
    against the adapter's 4 modules: 4 x 50 x 12 = 2,400 steps (4 for the call, at most two ends of
    the name tried, each 2 steps and 2 for the segment), and one set look-up per length of
    target_modules' names (5 and 18), 4 x 2 = 8 more."""
    from specbound.io.checkpoints import lora

    keys = {f"k{i:04d}": 2 for i in range(50)}
    assert patterns.SuffixPattern("k0000").cost("encoder.layer.0.attention.self.query") == 12
    monkeypatch.setattr(lora, "_MAX_MATCH_STEPS", 2_408)
    within = _copy(adapter, tmp_path / "within", alpha_pattern=keys)
    specbound.analyze(str(within), use_cache=False)  # exactly at the limit: read
    monkeypatch.setattr(lora, "_MAX_MATCH_STEPS", 2_407)
    assert_one_line_error(
        cli("analyze", str(within), "--no-cache"), "would take up to 2,408 steps to match its 4 modules"
    )


@pytest.mark.parametrize(
    "key",
    [
        r"(?:[^\n]*){4900}ZZ",  # the review's: 9 such keys ran for 99 s, each step a few microseconds
        "(?:[^"
        + "".join(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum() and c not in "\\]^-[._")
        + "]*){4900}Z",
    ],
)
def test_a_key_whose_steps_would_take_seconds_is_refused_in_one_line_at_once(
    adapter: Path, tmp_path: Path, key: str
) -> None:
    """One such key of 9,800 states on the adapter's 4 module names costs about 5 million steps:
    the 20 million the budget had before admitted configs that ran for minutes (a step cost a few
    microseconds, a step through a class one predicate per item); the budget of 2 million steps of
    bounded cost refuses it before any key is matched, in one line. The same key repeated 1,000 times
    (about 1 million steps) is read, and the review's nine keys are refused by the state budget."""
    from specbound.core.limits import LIMITS

    within = _copy(adapter, tmp_path / "within", alpha_pattern={key.replace("4900", "1000"): 3})
    assert cli("analyze", str(within), "--no-cache").returncode == 0
    one = _copy(adapter, tmp_path / "one", alpha_pattern={key: 3})
    assert_one_line_error(
        cli("analyze", str(one), "--no-cache"), "steps to match its 4 modules", f"{LIMITS.max_pattern_match_steps:,}"
    )
    nine = _copy(adapter, tmp_path / "nine", alpha_pattern={key + "Z" * i: 3 for i in range(9)})
    assert_one_line_error(cli("analyze", str(nine), "--no-cache"), "automaton states together")


def test_the_keys_of_a_config_share_one_budget_of_automaton_states(adapter: Path, tmp_path: Path) -> None:
    """Each key may unroll to 10,000 states, all of a config's keys to 20,000 together: three keys
    of 9,802 states each are refused at the third, before it is built whole."""
    keys = {f"(a{{99}}){{99}}x{i}": 2 for i in range(3)}
    assert patterns.SuffixPattern("(a{99}){99}x0").states < 10_000
    handed = _copy(adapter, tmp_path, alpha_pattern=keys)
    assert_one_line_error(
        cli("analyze", str(handed), "--no-cache"), "unroll to more than 20000 automaton states together"
    )


def _base_of(adapter: Path) -> Any:
    return transformers.BertModel.from_pretrained(
        json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
    )


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        # a string is matched whole (re.fullmatch): "query" names no module, so nothing is targeted
        ({"target_modules": "query"}, ("targets none of the 4 modules", "peft would load none of them")),
        ({"exclude_modules": ["query", "dense"]}, ("targets none of the 4 modules",)),
        ({"layers_to_transform": [5]}, ("targets none of the 4 modules",)),
        # peft wraps the attention block to load its saved weights, and the file has none
        ({"modules_to_save": ["layer.1.attention"]}, ("saves", "layer.1.attention.self.query", "modules_to_save")),
        ({"target_modules": ".*query", "layers_to_transform": [0]}, ("layers_to_transform cannot be used",)),
        ({"target_modules": "all-linear", "layers_to_transform": [0]}, ("layers_to_transform cannot be used",)),
        ({"layers_pattern": "layer"}, ("layers_pattern is given without layers_to_transform",)),
    ],
)
def test_a_config_peft_would_not_load_is_refused_in_one_line(
    adapter: Path, tmp_path: Path, fields: dict[str, Any], words: tuple[str, ...]
) -> None:
    """Where peft refuses to load the adapter (checked: it raises), specbound refuses in one line."""
    handed = _copy(adapter, tmp_path, **fields)
    with pytest.raises((ValueError, KeyError)):
        peft.PeftModel.from_pretrained(_base_of(adapter), handed)
    assert_one_line_error(cli("analyze", str(handed), "--no-cache"), *words)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        # peft loads it with none of the stored updates (and the key projections' LoRA as initialised)
        ({"target_modules": ["key"]}, ("targets none of the 4 modules",)),
        (
            {"target_modules": 3},
            ("adapter_config.json", "target_modules must be a string or a list of strings", "got 3"),
        ),
        (
            {"target_modules": None},
            (
                "adapter_config.json",
                "target_modules is not given",
            ),
        ),
        ({"target_modules": "query("}, ("adapter_config.json", "target_modules", "is not a valid regular expression")),
        ({"target_modules": r"(?=query).*"}, ("adapter_config.json", "target_modules", "a lookaround")),
        (
            {"exclude_modules": [1]},
            (
                "adapter_config.json",
                "exclude_modules must be a string or a list of strings",
            ),
        ),
        (
            {"layers_to_transform": ["0"]},
            (
                "adapter_config.json",
                "layers_to_transform must be a layer index or a list of them",
            ),
        ),
        (
            {"layers_to_transform": [0], "layers_pattern": "la.*r"},
            (
                "adapter_config.json",
                "layers_pattern must name the layers' list",
            ),
        ),
    ],
)
def test_a_targeting_value_specbound_cannot_follow_as_peft_does_is_refused(
    adapter: Path, tmp_path: Path, fields: dict[str, Any], words: tuple[str, ...]
) -> None:
    handed = _copy(adapter, tmp_path, **fields)
    assert_one_line_error(cli("analyze", str(handed), "--no-cache"), *words)


def test_a_target_expression_that_hangs_re_runs_in_bounded_time_as_peft_means_it(
    adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``target_modules`` string is a full match (peft's ``re.fullmatch``): the branch that backtracks
    for minutes matches nothing, the other the queries, so the adapter reads as if it targeted
    ``query`` alone, and the expression never reaches Python's matching engine."""
    real = {name: getattr(re, name) for name in ("match", "fullmatch", "search")}

    def guarded(name: str) -> Callable[..., Any]:
        def call(pattern: object, *args: Any, **kwargs: Any) -> Any:
            assert EVIL not in str(pattern), f"the adapter's expression reached re.{name}"
            return real[name](pattern, *args, **kwargs)

        return call

    for name in real:
        monkeypatch.setattr(re, name, guarded(name))
    hostile = _copy(adapter, tmp_path / "hostile", target_modules=rf"{EVIL}|.*\.query")
    plain = _copy(adapter, tmp_path / "plain", target_modules=["query"])
    ours = specbound.analyze(str(hostile), use_cache=False)
    theirs = specbound.analyze(str(plain), use_cache=False)
    np.testing.assert_array_equal(ours.profile.singular_values, theirs.profile.singular_values)
    assert ours.ours_centred == pytest.approx(theirs.ours_centred, rel=1e-15)
    frame = ours.to_frame()
    assert (frame[frame.kind == "M_in"].delta_rank == 0).all()  # intermediate.dense's factors ignored


def test_a_module_saved_whole_that_the_base_lacks_is_refused_naming_it(tmp_path: Path) -> None:
    """A weight saved whole (``modules_to_save``) for a module the base has not got (here a pooler,
    on a base saved without one) is refused, not silently dropped."""
    torch.manual_seed(0)
    save_model(transformers.BertModel(transformers.BertConfig(**_FIELDS), add_pooling_layer=False), tmp_path / "b")
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**_FIELDS))
    config = peft.LoraConfig(
        r=2, lora_alpha=4, target_modules=["query"], modules_to_save=["pooler.dense"], init_lora_weights=False
    )
    peft.get_peft_model(model, config).save_pretrained(tmp_path / "adapter")
    _edit(tmp_path / "adapter", base_model_name_or_path=str(tmp_path / "b"))
    assert_one_line_error(
        cli("analyze", str(tmp_path / "adapter"), "--no-cache"), "saves pooler.dense whole", "no weight"
    )


def _with_factors(adapter: Path, tmp_path: Path, module: str) -> Path:
    """The adapter, handed over with factors of one more module, named ``module``."""
    from safetensors.numpy import load_file, save_file

    handed = _copy(adapter, tmp_path)
    tensors = load_file(handed / "adapter_model.safetensors")
    tensors[f"base_model.model.{module}.lora_A.weight"] = np.zeros((2, 32), np.float32)
    tensors[f"base_model.model.{module}.lora_B.weight"] = np.zeros((32, 2), np.float32)
    save_file(tensors, handed / "adapter_model.safetensors")
    return handed


def test_a_tensor_name_over_the_limit_is_refused_before_any_name_is_matched(
    adapter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Matching a name costs its length times its parts where base names are scanned at each split
    point (a 200 KB name took minutes): a name over ``max_tensor_name_chars`` is refused first."""
    from specbound.core.errors import CheckpointError
    from specbound.core.limits import LIMITS
    from specbound.io.checkpoints import lora
    from specbound.io.loading import open_weights

    module = "a." * 5_000 + "query"
    handed = _with_factors(adapter, tmp_path, module)
    length = len(f"base_model.model.{module}.lora_A.weight")

    class Unreachable:
        def __init__(self, names: Any) -> None:
            raise AssertionError("a name was matched")

    monkeypatch.setattr(lora, "BaseNames", Unreachable)
    with pytest.raises(
        CheckpointError, match=f"a tensor of {length:,} characters .* more than the {LIMITS.max_tensor_name_chars:,}"
    ):
        open_weights(str(handed))
    line = assert_one_line_error(cli("analyze", str(handed), "--no-cache"), f"{length:,} characters", "1,024")
    assert len(line) < 400


def test_two_stored_modules_on_one_base_weight_are_refused(adapter: Path, tmp_path: Path) -> None:
    """A module under a bogus prefix resolves, by the suffix rule, to a weight another module changes:
    merged twice, or the last one kept, the number would be silently wrong."""
    handed = _with_factors(adapter, tmp_path, "x." * 400 + "encoder.layer.0.attention.self.query")
    assert_one_line_error(
        cli("analyze", str(handed), "--no-cache"), "stores two modules", "encoder.layer.0.attention.self.query"
    )
